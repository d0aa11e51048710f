#!/usr/bin/python3
"""Export a torchvision classification model to ONNX for cnet-run.

    export_onnx.py resnet50 resnet50.onnx                      random weights (seeded), nothing downloaded
    export_onnx.py resnet50 resnet50.onnx --weights my.pth     your state dict (or a checkpoint holding one)
    export_onnx.py vit_b_16 vit.onnx --weights default         torchvision's pretrained weights (downloads)

What it does is what the user guide shows for any model class: build the model, load_state_dict, eval(),
then torch.onnx.export with the batch as the only dynamic dimension. Models over 2 GB are written with
their weights in a file beside the .onnx (ONNX's external data), which cnet-run reads from there.
"""
import argparse
import sys

import torch
import torchvision


def build_model(name, weights="none", seed=0):
    """The torchvision model, in eval mode: random (seeded), torchvision's weights, or a .pth file's."""
    builder = getattr(torchvision.models, name, None)
    if builder is None or not callable(builder):
        sys.exit(f"export_onnx.py: torchvision has no model '{name}' (see torchvision.models.list_models())")
    torch.manual_seed(seed)
    if weights == "none":
        model = builder(weights=None)
        # torchvision starts some layers at zero (ViT's head): every image would score alike, so such
        # matrices are drawn at random too.
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1 and torch.count_nonzero(p) == 0:
                    torch.nn.init.normal_(p, std=0.02)
    elif weights == "default":
        model = builder(weights="DEFAULT")
    else:
        model = builder(weights=None)
        state = torch.load(weights, map_location="cpu")
        for key in ("state_dict", "model"):  # training checkpoints often nest the weights
            if isinstance(state, dict) and key in state and isinstance(state[key], dict):
                state = state[key]
        state = {k.removeprefix("module."): v for k, v in state.items()}  # saved from DataParallel/DDP
        model.load_state_dict(state)
    return model.eval()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a torchvision.models name: resnet18, resnet50, vit_b_16, ...")
    p.add_argument("output", help="the .onnx file to write")
    p.add_argument("--weights", default="none", help="none (random, seeded), default (torchvision's, downloaded) or a .pth file")
    p.add_argument("--seed", type=int, default=0, help="seed for random weights")
    p.add_argument("--image-size", type=int, default=224, help="the model's input height and width")
    p.add_argument("--opset", type=int, default=17, help="ONNX opset (cnet-run runs 13 to 17)")
    a = p.parse_args()

    model = build_model(a.model, a.weights, a.seed)
    example = torch.zeros(1, 3, a.image_size, a.image_size)
    # With gradients on: without them PyTorch's attention takes a fused fast path ONNX cannot express.
    torch.onnx.export(model, example, a.output, opset_version=a.opset, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, do_constant_folding=True)
    print(f"export_onnx.py: wrote {a.output} ({a.model}, weights {a.weights}, opset {a.opset})", file=sys.stderr)


if __name__ == "__main__":
    main()
