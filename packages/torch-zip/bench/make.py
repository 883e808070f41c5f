"""Inputs for measure.mjs: python3 make.py DIR"""
import os, sys, torch
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
torch.manual_seed(0)
torch.save({f"layer.{i}.w": torch.randn(4) for i in range(100_000)}, os.path.join(d, "many.pt"))
torch.save({f"block.{i}.weight": torch.randn(4096, 4096) for i in range(16)}, os.path.join(d, "big.pt"))  # 1 GiB
