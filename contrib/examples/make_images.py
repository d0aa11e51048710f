#!/usr/bin/python3
"""make_images.py DIR N: N smooth random images, JPEG and PNG by turns, in several sizes, shapes and
colour modes: a folder for cnet-run --input when no photos are at hand (the demo and the tests use it)."""
import os
import sys

import numpy as np
from PIL import Image

out, count = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
sizes = [(320, 240), (240, 320), (500, 375), (256, 256), (300, 300), (640, 480), (224, 224), (257, 390)]
for i in range(count):
    w, h = sizes[i % len(sizes)]
    small = (rng.random((max(h // 16, 2), max(w // 16, 2), 3)) * 255).astype(np.uint8)
    img = Image.fromarray(small).resize((w, h), Image.BILINEAR)
    if i % 3 == 2:
        img = img.convert("L")  # greyscale files come out as RGB too
    img.save(os.path.join(out, f"img_{i:03d}.{'jpg' if i % 2 == 0 else 'png'}"), **({"quality": 90} if i % 2 == 0 else {}))
