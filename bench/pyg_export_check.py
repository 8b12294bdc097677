#!/usr/bin/env python3
"""bench/pyg_export_check.py: does PyG load what gnn.export_model writes, and
compute the same logits?

Reads a safetensors file (parsed here with numpy: the format is an 8-byte
little-endian header length, a JSON header, then raw little-endian data),
builds the PyG model its metadata names (torch_geometric.nn.models.GCN or
GraphSAGE with the same widths and layers; Node2Vec's table for node2vec),
loads the tensors with load_state_dict(strict=True), runs it on Cora
(../shared/data/cora: the citations undirected, the bag-of-words rows
divided by their sums when the metadata's row_normalise is true, as gnn
reads them) and compares its output with gnn's own (a CSV of id and the
output layer's values, from gnn._embedding_rows(model, layer => layers - 1)).
Prints the largest absolute difference and exits 1 when it is above --tol.

    . /opt/gnn-peers/env.sh
    /usr/bin/python3 bench/pyg_export_check.py --data ../shared/data/cora --blob m.safetensors --logits m.csv
"""
import argparse
import csv
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", t
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"]).copy()
    return tensors, meta


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--blob", required=True)
    p.add_argument("--logits", required=True)
    p.add_argument("--tol", type=float, default=1e-5)
    a = p.parse_args()

    import torch
    from torch_geometric.nn.models import GCN, GraphSAGE

    torch.set_num_threads(1)
    tensors, meta = read_safetensors(a.blob)
    kind, layers = meta["model"], int(meta["layers"])
    in_dim, hidden, out_dim = int(meta["in_dim"]), int(meta["hidden"]), int(meta["out_dim"])
    if meta.get("layout") != "pyg" or kind not in ("gcn", "graphsage"):
        sys.exit(f"not a PyG-layout GCN or GraphSAGE: {meta}")
    cls = GCN if kind == "gcn" else GraphSAGE
    model = cls(in_dim, hidden, layers, out_dim)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    model.eval()

    ids = []
    with open(os.path.join(a.data, "nodes.csv")) as f:
        for row in csv.DictReader(f):
            ids.append(int(row["id"]))
    ids.sort()
    pos = {v: i for i, v in enumerate(ids)}
    n = len(ids)
    x = np.zeros((n, in_dim), dtype=np.float32)
    with open(os.path.join(a.data, "features_coo.csv")) as f:
        for row in csv.DictReader(f):
            x[pos[int(row["id"])], int(row["feature"])] = float(row["value"])
    if meta.get("row_normalise", "true") == "true":
        s = x.sum(axis=1, keepdims=True)
        x = np.divide(x, s, out=np.zeros_like(x), where=s != 0)
    src, dst = [], []
    with open(os.path.join(a.data, "edges.csv")) as f:
        for row in csv.DictReader(f):
            src.append(pos[int(row["src"])])
            dst.append(pos[int(row["dst"])])
    ei = torch.unique(torch.tensor([src + dst, dst + src]), dim=1)
    with torch.no_grad():
        out = model(torch.from_numpy(x), ei).numpy()

    ours = np.zeros_like(out)
    seen = 0
    with open(a.logits) as f:
        for row in csv.reader(f):
            ours[pos[int(row[0])]] = [float(v) for v in row[1:]]
            seen += 1
    if seen != n:
        sys.exit(f"{seen} rows of logits for {n} nodes")
    diff = float(np.max(np.abs(out - ours)))
    scale = float(np.max(np.abs(ours)))
    same_argmax = float(np.mean(out.argmax(1) == ours.argmax(1)))
    print(f"{kind}: {layers} layers {in_dim} -> {hidden} -> {out_dim}; largest difference {diff:.3g} "
          f"(largest logit {scale:.3g}); the same class for {same_argmax:.4f} of the nodes")
    sys.exit(0 if diff <= a.tol else 1)


if __name__ == "__main__":
    main()
