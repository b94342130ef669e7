#!/usr/bin/python3
"""Exports a few real architectures to ONNX *without weights* (shapes only) for the tests.

Usage: /usr/bin/python3 scripts/export_models.py [OUT_DIR]   (default tests/data/models)

Needs Debian's python3-torch and python3-torchvision (run with /usr/bin/python3: a pyenv
`python3` on PATH does not see Debian's packages). The files are checked in, so that the tests
need neither torch nor onnx; rerun this only to change the set of models.

Weights are left out (export_params=False): every parameter becomes a graph input with its
shape, which is all `xpu_tracegen onnx` reads, and a file stays a few hundred KB instead of
~100 MB. The batch (and, for the decoder block, the sequence length) are symbolic dims named
`batch` and `seq`, set by `xpu_tracegen onnx --batch B --seq S`. Models are built untrained
(weights=None), in eval mode (BatchNormalization and Dropout as at inference), opset 17 (the
first with LayerNormalization).
"""
import io
import math
import os
import sys

import torch
import torch.nn as nn
import torchvision


class Gpt2Block(nn.Module):
    """One GPT-2 (small) decoder block: pre-LayerNorm attention and GELU MLP, with residuals.

    The causal mask is left out (it would only add a constant Add before the softmax)."""

    def __init__(self, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, ffn)
        self.act = nn.GELU()
        self.mlp_proj = nn.Linear(ffn, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q = q.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        v = v.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(self.hd), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


def models():
    tv = torchvision.models
    # ViT-S/16 (the "small" ViT: 12 layers, 6 heads, width 384, MLP 1536) at 224 x 224.
    vit_s16 = torchvision.models.vision_transformer.VisionTransformer(
        image_size=224, patch_size=16, num_layers=12, num_heads=6, hidden_dim=384, mlp_dim=1536)
    return [
        ("resnet50", tv.resnet50(weights=None), (1, 3, 224, 224), {0: "batch"}),
        ("mobilenetv2", tv.mobilenet_v2(weights=None), (1, 3, 224, 224), {0: "batch"}),
        ("vit_s16", vit_s16, (1, 3, 224, 224), {0: "batch"}),
        ("gpt2_block", Gpt2Block(), (1, 128, 768), {0: "batch", 1: "seq"}),
    ]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "models")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    for name, model, shape, dyn in models():
        model.eval()
        buf = io.BytesIO()
        torch.onnx.export(model, torch.zeros(shape), buf, export_params=False, opset_version=17,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": dyn, "output": {0: "batch"}}, do_constant_folding=True)
        data = buf.getvalue()
        if len(data) > 1 << 20:
            sys.exit(f"export_models: {name} is {len(data)} bytes, over the 1 MB budget for checked-in models")
        path = os.path.join(out_dir, name + ".onnx")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print(f"wrote {path}: {len(data)} bytes")


if __name__ == "__main__":
    main()
