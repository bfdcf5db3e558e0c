"""How a localiser checkpoint's mask lies on the Toloka and bdci2020 calibration photos (held out from choosing):
mean mask IoU with the labelled box, the share of photos whose box it covers at least half of, and the share of
the mask inside the box.

    python3 measure_localiser.py CHECKPOINT.pt
"""
import sys
import torch, torch.nn.functional as F
from common import read_labels, SPLITS, DEVICE
from train_localiser import Localiser, load_all, to_tensors, INPUT, STRIDE
torch.set_num_threads(2)
model = Localiser()
model.load_state_dict(torch.load(sys.argv[1], map_location='cpu'))
model.eval()
for dataset in ('toloka', 'bdci2020'):
    names = set((SPLITS / f'{dataset}-calibration.txt').read_text().split())
    rows = [r for r in read_labels(dataset) if r['file'] in names]
    images, masks = to_tensors(*load_all(rows, f'calib-{dataset}'))
    ious, covs, precs = [], [], []
    with torch.no_grad():
        for s in range(0, images.shape[0], 32):
            x = F.interpolate(images[s:s + 32], size=(INPUT, INPUT), mode='bilinear', align_corners=False)
            target = F.interpolate(masks[s:s + 32], size=(INPUT // STRIDE, INPUT // STRIDE), mode='area') > 0.5
            pred = model(x - 0.5) > 0
            inter = (pred & target).sum((1, 2, 3)).float()
            union = (pred | target).sum((1, 2, 3)).float().clamp(min=1)
            ious.append(inter / union); covs.append(inter / target.sum((1, 2, 3)).float().clamp(min=1)); precs.append(inter / pred.sum((1, 2, 3)).float().clamp(min=1))
    iou = torch.cat(ious)
    cov = torch.cat(covs); prec = torch.cat(precs); print(f'   box covered >=0.5: {(cov >= 0.5).float().mean():.1%}, mean share of the mask inside the box {prec.mean():.2f}'); print(f'{dataset}: {len(rows)} photos, mean mask IoU {iou.mean():.3f}, IoU>=0.3 {(iou >= 0.3).float().mean():.1%}, >=0.5 {(iou >= 0.5).float().mean():.1%}')
