"""Experiment (issue #15, taken out again): a roll reader on the digits/ crops, how far a wheel has rolled (tenths 0-9),
framed as the service frames a wheel.  cd ml && python3 train_rolls.py 3000 ../.pack/rolls.onnx"""
import random, sys, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
from common import configure_threads, seed_everything, export_onnx, Export
from synth import load_digit_crops
from train_wheels import WheelReader, framed_digit, HEIGHT, WIDTH, AUGMENTATION
from train_reader import photometric, to_tensor

configure_threads(); seed_everything(1)
steps = int(sys.argv[1]); out = sys.argv[2]
crops = [(c, t) for (d, t), tile in load_digit_crops().items() for c in tile]
rng0 = random.Random(0); rng0.shuffle(crops)
cut = len(crops) * 85 // 100
train, held = crops[:cut], crops[cut:]
print(len(train), len(held), flush=True)
rng = np.random.default_rng(1); digit_rng = random.Random(1)
def batch(pool, size):
    xs, ys = [], []
    for _ in range(size):
        c, t = pool[rng.integers(len(pool))]
        xs.append(to_tensor(photometric(framed_digit(c, rng, digit_rng), rng, AUGMENTATION))); ys.append(t)
    return torch.stack(xs), torch.tensor(ys)
model = WheelReader()
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-3)
hx, hy = batch(held, 1500)
start = time.time()
for step in range(steps):
    for g in opt.param_groups: g['lr'] = 2e-3 * min(1, step / 100) * 0.5 * (1 + np.cos(np.pi * step / steps))
    x, y = batch(train, 64)
    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 200 == 0 or step == steps - 1:
        model.eval()
        with torch.no_grad():
            p = model(hx).softmax(1)
        model.train()
        dist = torch.minimum(torch.arange(10), 10 - torch.arange(10)).float() / 5
        roll = (p * dist).sum(1); truth = dist[hy]
        mid = truth >= 0.6
        print(f'step {step} loss {loss.item():.3f} {time.time()-start:.0f}s acc {(p.argmax(1)==hy).float().mean():.3f} '
              f'corr {np.corrcoef(roll, truth)[0,1]:.3f} roll mid {roll[mid].mean():.2f} settled {roll[truth<=0.2].mean():.2f}', flush=True)
model.eval()
export_onnx(model, Export((1, 3, HEIGHT, WIDTH), 'wheels', ['probabilities'], lambda m: nn.Sequential(m, nn.Softmax(1))), out)
print('exported', out)
