#!/usr/bin/env python3
"""bench/pyg_node2vec.py: node2vec on Cora in PyTorch Geometric, and the
evaluation both sides share.

Two modes:

  train  PyG 2.3's Node2Vec (examples/node2vec.py's settings: 128 wide,
         walks of 20 nodes, context 10, 10 walks per node, 1 negative,
         SparseAdam lr 0.01, batches of 128 start nodes) on Cora's citations
         made undirected, for --epochs epochs at --threads threads; prints
         the seconds of every epoch, then the test accuracy of the protocol
         below at --eval-at epochs.  The walks come from pyg-lib's
         random_walk (torch.ops.pyg.random_walk: what PyG 2.4 and later use;
         2.3 asks for torch-cluster, which the peers build lacks): same
         signature, same walks.

  eval   reads embeddings from a CSV (id, then the values; gnn.embed's table
         exported with COPY) and prints the same protocol's test accuracy.

Protocol (the same both sides): multinomial logistic regression with an L2
penalty (C = 1, as scikit-learn's default; L-BFGS, 150 iterations, as
PyG's example) on the 140 training nodes' embeddings, accuracy on the 1000
test nodes (Planetoid's split, ../shared/data/cora/nodes.csv).

    . /opt/gnn-peers/env.sh
    /usr/bin/python3 bench/pyg_node2vec.py train --data ../shared/data/cora --threads 2 --epochs 100
    /usr/bin/python3 bench/pyg_node2vec.py eval --data ../shared/data/cora --emb /tmp/gnn_emb.csv
"""
import argparse
import csv
import os
import sys
import time

import numpy as np


def read_nodes(data):
    ids, labels, splits = [], [], []
    with open(os.path.join(data, "nodes.csv")) as f:
        for row in csv.DictReader(f):
            ids.append(int(row["id"]))
            labels.append(int(row["label"]))
            splits.append(row["split"])
    order = np.argsort(ids)
    return (np.array(ids)[order], np.array(labels)[order], np.array(splits)[order])


def logreg_accuracy(emb, labels, splits, c=1.0, iters=150):
    """Multinomial logistic regression, L2 with C (loss = C * sum CE + ||W||^2 / 2), L-BFGS."""
    from scipy.optimize import minimize

    tr = splits == "train"
    te = splits == "test"
    x, y = emb[tr].astype(np.float64), labels[tr]
    k = int(labels.max()) + 1
    n, d = x.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1

    def f(w):
        wm = w[: d * k].reshape(d, k)
        b = w[d * k:]
        z = x @ wm + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -c * np.sum(np.log(p[np.arange(n), y] + 1e-300)) + 0.5 * np.sum(wm * wm)
        g = c * (p - onehot)
        gw = x.T @ g + wm
        gb = g.sum(axis=0)
        return loss, np.concatenate([gw.ravel(), gb])

    w0 = np.zeros(d * k + k)
    r = minimize(f, w0, jac=True, method="L-BFGS-B", options={"maxiter": iters})
    wm = r.x[: d * k].reshape(d, k)
    b = r.x[d * k:]
    pred = np.argmax(emb[te].astype(np.float64) @ wm + b, axis=1)
    return float(np.mean(pred == labels[te]))


def train(a):
    import torch
    import torch_geometric.nn.models.node2vec as n2v
    import pyg_lib  # noqa: F401 (registers torch.ops.pyg)

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if n2v.random_walk is None:
        n2v.random_walk = torch.ops.pyg.random_walk
    ids, labels, splits = read_nodes(a.data)
    src, dst = [], []
    with open(os.path.join(a.data, "edges.csv")) as f:
        for row in csv.DictReader(f):
            src.append(int(row["src"]))
            dst.append(int(row["dst"]))
    e = torch.tensor([src + dst, dst + src])
    e = torch.unique(e, dim=1)      # undirected, duplicates merged (as gnn.load_graph's undirected)
    model = n2v.Node2Vec(e, embedding_dim=a.dim, walk_length=a.walk_length, context_size=a.context,
                         walks_per_node=a.walks, num_negative_samples=a.neg, p=1, q=1,
                         num_nodes=len(ids), sparse=True)
    loader = model.loader(batch_size=128, shuffle=True, num_workers=0)
    opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
    times = []
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        total = 0.0
        for pos, neg in loader:
            opt.zero_grad()
            loss = model.loss(pos, neg)
            loss.backward()
            opt.step()
            total += loss.item()
        times.append(time.perf_counter() - t0)
        print(f"epoch {epoch} loss {total / len(loader):.4f} seconds {times[-1]:.3f}", flush=True)
        if epoch in a.eval_at:
            acc = logreg_accuracy(model().detach().numpy(), labels, splits)
            print(f"accuracy at epoch {epoch}: {acc:.4f}", flush=True)
    print(f"mean epoch seconds {np.mean(times):.3f} (median {np.median(times):.3f})")


def evaluate(a):
    ids, labels, splits = read_nodes(a.data)
    pos = {v: i for i, v in enumerate(ids)}
    emb = None
    with open(a.emb) as f:
        for row in csv.reader(f):
            vals = [float(v) for v in row[1:]]
            if emb is None:
                emb = np.zeros((len(ids), len(vals)))
            emb[pos[int(row[0])]] = vals
    print(f"accuracy: {logreg_accuracy(emb, labels, splits):.4f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["train", "eval"])
    p.add_argument("--data", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--eval-at", type=lambda s: [int(x) for x in s.split(",")], default=[5, 100])
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--walk-length", type=int, default=20)
    p.add_argument("--context", type=int, default=10)
    p.add_argument("--walks", type=int, default=10)
    p.add_argument("--neg", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--emb")
    a = p.parse_args()
    if a.mode == "train":
        train(a)
    else:
        if not a.emb:
            sys.exit("eval needs --emb")
        evaluate(a)


if __name__ == "__main__":
    main()
