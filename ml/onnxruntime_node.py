"""An ONNX file run by onnxruntime-node, the runtime the service reads its networks with: what the tests hold an
export to (npm ci installs it)."""
import json
import subprocess

import numpy as np

from common import REPO_ROOT

NODE = REPO_ROOT / 'node_modules' / '.bin' / 'node'
RUN = """
const ort = require('onnxruntime-node');
let text = '';
process.stdin.on('data', (chunk) => (text += chunk)).on('end', async () => {
  const { file, inputs } = JSON.parse(text);
  const session = await ort.InferenceSession.create(file);
  const feeds = Object.fromEntries(Object.entries(inputs).map(([name, { dims, data }]) =>
    [name, new ort.Tensor('float32', Float32Array.from(data), dims)]));
  const outputs = await session.run(feeds);
  console.log(JSON.stringify(Object.fromEntries(Object.entries(outputs).map(([name, tensor]) =>
    [name, { dims: tensor.dims, data: Array.from(tensor.data) }]))));
});
"""


def run_in_onnxruntime(file, inputs):
    """`file` run on `inputs` (name: float32 array): its outputs by name, as arrays."""
    request = {'file': str(file), 'inputs': {name: {'dims': list(value.shape), 'data': value.ravel().tolist()}
                                             for name, value in inputs.items()}}
    result = subprocess.run([str(NODE), '-e', RUN], input=json.dumps(request), cwd=REPO_ROOT, check=True,
                            capture_output=True, text=True)
    return {name: np.array(output['data'], np.float32).reshape(output['dims'])
            for name, output in json.loads(result.stdout).items()}
