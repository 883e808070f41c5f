"""A transcription of mlx-lm's per-layer quantization choices (mlx-lm d78bf58), written from its
source and sharing nothing with packages/mlx/src, used as the oracle for the recipe tests:

- mlx_lm/convert.py `mixed_quant_predicate_builder` (the mixed_* recipes);
- mlx_lm/models/qwen3_moe.py `quant_predicate` (the model rule used when no recipe is given);
- mlx_lm/utils.py `quantize_model` / `wrapped_predicate` (what reaches the predicate, and which
  results become config.json entries) and python/mlx/nn/layers/quantized.py `_defaults_for_mode`.

The real mlx_lm package cannot be installed here (no index serves it), so this stands in for it.
stdin: a JSON list of requests {"modules": [[path, last_dim], ...] (the model's quantizable leaf modules, in order),
"recipe": name or null, "group_size": int or null, "bits": int or null, "num_layers": int,
"model_type": str}. stdout: the list of answers {"section": ..., "layers": {path: [bits, group_size, mode] or null}}.
"""
import json
import sys

MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def mixed(recipe, paths, num_layers, group_size):
    low, high = {"mixed_2_6": (2, 6), "mixed_3_4": (3, 4), "mixed_3_6": (3, 6), "mixed_4_6": (4, 6)}[recipe]
    down = [p for p in paths if "down_proj" in p]
    if not down:
        raise ValueError("Model does not have expected keys for mixed quant.")
    for loc, part in enumerate(down[0].split(".")):
        if part.isdigit():
            break

    def pred(path):
        parts = path.split(".")
        i = int(parts[loc]) if len(parts) > loc else 0
        more = i < num_layers // 8 or i >= 7 * num_layers // 8 or (i - num_layers // 8) % 3 == 2
        if ("v_proj" in path or "v_a_proj" in path or "v_b_proj" in path) and more:
            return {"group_size": group_size, "bits": high, "mode": "affine"}
        if "down_proj" in path and more:
            return {"group_size": group_size, "bits": high, "mode": "affine"}
        if "lm_head" in path:
            return {"group_size": group_size, "bits": high, "mode": "affine"}
        return {"group_size": group_size, "bits": low, "mode": "affine"}

    return pred


def qwen3_moe(path):
    return {"group_size": 64, "bits": 8} if path.endswith("mlp.gate") else True


def choices(req):
    mode = "affine"
    gs, bits = MODE_DEFAULTS[mode]
    gs = req["group_size"] or gs
    bits = req["bits"] or bits
    section = {"group_size": gs, "bits": bits, "mode": mode}
    paths = [p for p, _ in req["modules"]]
    if req["recipe"]:
        pred = mixed(req["recipe"], paths, req["num_layers"], req["group_size"])
    elif req["model_type"] == "qwen3_moe":
        pred = qwen3_moe
    else:
        pred = None
    layers = {}
    for path, last in req["modules"]:
        if last % gs != 0:
            layers[path] = None
            continue
        verdict = pred(path) if pred else True
        if isinstance(verdict, dict):
            section[path] = verdict
            m = verdict.get("mode", "affine")
            dgs, dbits = MODE_DEFAULTS[m]
            layers[path] = [verdict.get("bits") or dbits, verdict.get("group_size") or dgs, m]
        elif verdict:
            layers[path] = [bits, gs, mode]
        else:
            layers[path] = None
    return {"section": section, "layers": layers}


def main():
    json.dump([choices(r) for r in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
