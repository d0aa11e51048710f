#!/usr/bin/python3
"""What PyTorch computes, for tests that hold cnet-run to it.

    torch_reference.py logits MODEL SEED INPUT.safetensors OUT.npy   the torchvision model as export_onnx.py builds
                                                                     it (random weights), on cnet's input rows
    torch_reference.py preprocess IMAGE_DIR INPUT.safetensors         torchvision's preprocessing of the images
                                                                     against the rows cnet-run make-input wrote
"""
import glob
import json
import os
import struct
import sys

import numpy as np
import torch
import torchvision
from torchvision import transforms as T
from torchvision.io import ImageReadMode, read_image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib", "examples"))
from export_onnx import build_model  # noqa: E402  the same model the test exported


def read_input(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    t = header["input"]
    start, end = t["data_offsets"]
    return np.frombuffer(b[8 + n + start:8 + n + end], dtype=np.float32).reshape(t["shape"])


def logits(model, seed, input_path, out):
    m = build_model(model, "none", int(seed))
    x = torch.from_numpy(read_input(input_path).copy()).reshape(-1, 3, 224, 224)
    with torch.inference_mode():
        np.save(out, m(x).numpy())


def preprocess(image_dir, input_path):
    mine = read_input(input_path).reshape(-1, 3, 224, 224)
    files = sorted(glob.glob(image_dir + "/*.jpg") + glob.glob(image_dir + "/*.png"))
    resize = T.Compose([T.Resize(256, interpolation=T.InterpolationMode.BILINEAR, antialias=False), T.CenterCrop(224)])
    norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    worst = 0.0
    for i, f in enumerate(files):
        ref = norm(resize(read_image(f, ImageReadMode.RGB).float()) / 255.0).numpy()
        worst = max(worst, float(np.abs(ref - mine[i]).max()))
    print(f"{len(files)} images, largest difference from torchvision {worst:.3g}")
    sys.exit(0 if len(files) == mine.shape[0] and worst < 1e-5 else 1)


if __name__ == "__main__":
    {"logits": logits, "preprocess": preprocess}[sys.argv[1]](*sys.argv[2:])
