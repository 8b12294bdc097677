#!/usr/bin/env python3
"""bench/pyg_hetero.py: the shop benchmark in PyTorch Geometric, for comparison.

Reads the CSV files of bench/schema_export.sh, builds a HeteroData graph the
way gnn builds one from the same tables, and trains customers.segment node
classification with a heterogeneous GraphSAGE (to_hetero over SAGEConv),
mini-batches from NeighborLoader with time-aware sampling (--no-time: without).

    bash bench/schema_gen.sh -d shop
    bash bench/schema_export.sh /tmp/shop-csv -d shop
    python3 bench/pyg_hetero.py /tmp/shop-csv --epochs 3

Graph:
  node types  categories, products, customers, reviews (one node per row)
  edge types  one per foreign key, from the referencing row to the
              referenced one, plus its reverse ("rev_" + column):
                products  -category_id-> categories
                reviews   -customer_id-> customers
                reviews   -product_id->  products   (a NULL product_id is no edge)
  features    as gnn's column encoders (src/core/encode.h) do: numbers and
              times standardised (plus a missing indicator where a NULL
              occurs), text one-hot over its 32 most frequent values (ties
              by byte order) plus an "other" slot where there were more and
              a NULL indicator where a NULL occurs.  Keys and foreign keys
              are not features; neither are the customer targets (segment,
              churn, spend) or split.
  time        every node type has `time` (epoch seconds: categories.created_at,
              products.added_at, customers.signed_up, reviews.created_at);
              sampling only admits neighbours with time <= the seed's time,
              which is the label cutoff (the latest review; --cutoff), not
              the customer's own signed_up, else no review would be seen.
              --no-time samples without time (no time_attr, no input_time)
              and drops the `time` attributes, so batches do not carry them.

Model: to_hetero(SAGE) with --layers SAGEConv layers (hidden --hidden, ReLU),
per-relation SAGEConv summed per destination type; fan-out --fanout per layer
for every relation; Adam; cross-entropy on the training split.  With 2
layers a customer sees its reviews and the reviewed products (their brand
and price only weakly say the department), with 3 the products' categories
too (where the department is: test/shop_check.sql shows what each reaches).

Prints per epoch the seconds spent sampling (the loader: neighbour sampling,
feature gathering, collation) and computing (transfer, forward, backward,
step; CUDA synchronised), the loss and validation accuracy, then the test
accuracy.  Needs torch, torch_geometric with pyg-lib (temporal sampling), pandas.
"""
import argparse
import os
import sys
import time

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import SAGEConv, to_hetero


# --------------------------------------------------------------------------
# column encoders (the semantics of src/core/encode.h)

def enc_numeric(s):
    v = pd.to_numeric(s, errors='coerce').astype('float64').to_numpy()
    miss = np.isnan(v)
    mean = np.nanmean(v) if (~miss).any() else 0.0
    std = np.nanstd(v) if (~miss).any() else 1.0
    if not np.isfinite(std) or std == 0:
        std = 1.0
    out = np.where(miss, 0.0, (v - mean) / std)[:, None]
    if miss.any():
        out = np.hstack([out, miss[:, None].astype('float64')])
    return out.astype(np.float32)


def enc_category(s, max_categories=32):
    isnull = s.isna().to_numpy()
    vals = s[~s.isna()].astype(str)
    counts = vals.value_counts()
    # most frequent first, ties by byte order of the value
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].encode('utf-8')))
    keep = [k for k, _ in order[:max_categories]]
    other = len(order) > max_categories
    width = len(keep) + (1 if other else 0) + (1 if isnull.any() else 0)
    out = np.zeros((len(s), width), dtype=np.float32)
    codes = pd.Categorical(s, categories=keep).codes  # -1: NULL or not kept
    rows = np.nonzero(codes >= 0)[0]
    out[rows, codes[rows]] = 1.0
    col = len(keep)
    if other:
        out[(codes < 0) & ~isnull, col] = 1.0
        col += 1
    if isnull.any():
        out[isnull, col] = 1.0
    return out


def encode(df, spec, max_categories):
    parts = []
    for col, kind in spec:
        if kind in ('numeric', 'time'):
            parts.append(enc_numeric(df[col]))
        elif kind == 'category':
            parts.append(enc_category(df[col], max_categories))
        else:
            raise ValueError(kind)
    return torch.from_numpy(np.hstack(parts))


# --------------------------------------------------------------------------
# the graph

def read_csv(d, name, **kw):
    t = time.perf_counter()
    df = pd.read_csv(os.path.join(d, name + '.csv'), keep_default_na=False,
                     na_values=[''], **kw)
    print(f'  read {name}.csv: {len(df)} rows, {time.perf_counter() - t:.1f} s', flush=True)
    return df


def key_index(keys, refs, what):
    """Row index of each referenced key (refs without NULLs)."""
    idx = pd.Index(keys).get_indexer(refs)
    if (idx < 0).any():
        raise SystemExit(f'{what}: {(idx < 0).sum()} references to missing keys')
    return torch.from_numpy(idx.astype(np.int64))


def build(d, max_categories):
    # keys as strings or exact int64: product ids pass 2^53, and a nullable
    # integer column may be parsed through float (pandas 1.x 'Int64' is), so
    # reviews.product_id is read as text and converted without NULLs
    cat = read_csv(d, 'categories', dtype={'id': str, 'name': str, 'dept': str})
    prod = read_csv(d, 'products', dtype={'id': np.int64, 'category_id': str, 'name': str,
                                          'brand': str})
    cust = read_csv(d, 'customers', dtype={'id': str, 'country': str, 'segment': str,
                                           'split': str, 'churn': str})
    rev = read_csv(d, 'reviews', dtype={'id': np.int64, 'customer_id': str,
                                        'product_id': str})
    t = time.perf_counter()
    data = HeteroData()
    data['categories'].x = encode(cat, [('name', 'category'), ('dept', 'category'),
                                        ('created_at', 'time')], max_categories)
    data['products'].x = encode(prod, [('name', 'category'), ('brand', 'category'),
                                       ('price', 'numeric'), ('weight_kg', 'numeric'),
                                       ('added_at', 'time')], max_categories)
    data['customers'].x = encode(cust, [('age', 'numeric'), ('country', 'category'),
                                        ('signed_up', 'time')], max_categories)
    data['reviews'].x = encode(rev, [('rating', 'numeric'), ('body_len', 'numeric'),
                                     ('created_at', 'time')], max_categories)
    data['categories'].time = torch.from_numpy(cat['created_at'].to_numpy(np.int64))
    data['products'].time = torch.from_numpy(prod['added_at'].to_numpy(np.int64))
    data['customers'].time = torch.from_numpy(cust['signed_up'].to_numpy(np.int64))
    data['reviews'].time = torch.from_numpy(rev['created_at'].to_numpy(np.int64))

    def fk(src_type, col, dst_type, src_rows, dst_idx):
        ei = torch.stack([src_rows, dst_idx])
        data[src_type, col, dst_type].edge_index = ei
        data[dst_type, 'rev_' + col, src_type].edge_index = ei.flip(0)

    fk('products', 'category_id', 'categories', torch.arange(len(prod)),
       key_index(cat['id'], prod['category_id'], 'products.category_id'))
    fk('reviews', 'customer_id', 'customers', torch.arange(len(rev)),
       key_index(cust['id'], rev['customer_id'], 'reviews.customer_id'))
    has = rev['product_id'].notna().to_numpy()
    fk('reviews', 'product_id', 'products', torch.from_numpy(np.nonzero(has)[0].astype(np.int64)),
       key_index(prod['id'], rev['product_id'][has].map(int).to_numpy(np.int64),
                 'reviews.product_id'))

    classes = sorted(cust['segment'].dropna().unique())
    y = pd.Categorical(cust['segment'], categories=classes).codes
    data['customers'].y = torch.from_numpy(y.astype(np.int64))
    split = cust['split'].to_numpy()
    print(f'  encode and link: {time.perf_counter() - t:.1f} s', flush=True)
    return data, classes, split, int(rev['created_at'].max())


# --------------------------------------------------------------------------

class SAGE(torch.nn.Module):
    def __init__(self, hidden, out, layers):
        super().__init__()
        dims = [hidden] * (layers - 1) + [out]
        self.convs = torch.nn.ModuleList(SAGEConv((-1, -1), h) for h in dims)

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = x.relu()
        return x


def loader(data, idx, cutoff, args, shuffle):
    if args.no_time:
        return NeighborLoader(
            data, num_neighbors=args.fanout, batch_size=args.batch_size, shuffle=shuffle,
            input_nodes=('customers', idx), num_workers=args.num_workers)
    return NeighborLoader(
        data, num_neighbors=args.fanout, batch_size=args.batch_size, shuffle=shuffle,
        input_nodes=('customers', idx),
        # the seeds' time is the label cutoff (see the header)
        input_time=torch.full((len(idx),), cutoff, dtype=torch.int64),
        time_attr='time', temporal_strategy='uniform', num_workers=args.num_workers)


def run_epoch(model, ld, dev, opt=None):
    """One pass; returns (sampling s, compute s, mean loss, accuracy)."""
    t_sample = t_compute = 0.0
    loss_sum = correct = seen = 0
    it = iter(ld)
    while True:
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        batch = batch.to(dev)
        bs = batch['customers'].batch_size
        with torch.set_grad_enabled(opt is not None):
            out = model(batch.x_dict, batch.edge_index_dict)['customers'][:bs]
            y = batch['customers'].y[:bs]
            loss = F.cross_entropy(out, y)
            if opt is not None:
                opt.zero_grad()
                loss.backward()
                opt.step()
        loss_sum += float(loss) * bs
        correct += int((out.argmax(-1) == y).sum())
        seen += bs
        if dev.type == 'cuda':
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        t_sample += t1 - t0
        t_compute += t2 - t1
    return t_sample, t_compute, loss_sum / max(seen, 1), correct / max(seen, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('data', help='directory of bench/schema_export.sh')
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--batch-size', type=int, default=1024)
    ap.add_argument('--hidden', type=int, default=128)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--fanout', type=int, nargs='+', default=None,
                    help='neighbours per layer (default 10 per layer)')
    ap.add_argument('--lr', type=float, default=0.005)
    ap.add_argument('--max-categories', type=int, default=32)
    ap.add_argument('--cutoff', type=int, default=None,
                    help='seed time, epoch seconds (default: the latest review)')
    ap.add_argument('--no-time', action='store_true',
                    help='sample without time (no time_attr / input_time): every neighbour is admissible')
    ap.add_argument('--num-workers', type=int, default=0)
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--threads', type=int, default=0,
                    help="torch's intra-op threads (0: torch's default; Debian's torch uses 1 unless told): "
                         "give gnn.threads' number to compare at equal threads")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.fanout is None:
        args.fanout = [10] * args.layers
    if len(args.fanout) != args.layers:
        ap.error('--fanout needs one number per layer')
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)

    print(f'pyg_hetero: {args.data}, {args.layers} layers, hidden {args.hidden}, '
          f'fanout {args.fanout}, batch {args.batch_size}, device {dev}, '
          f'time-aware sampling {"off" if args.no_time else "on"}', flush=True)
    t = time.perf_counter()
    data, classes, split, latest = build(args.data, args.max_categories)
    cutoff = args.cutoff if args.cutoff is not None else latest
    if args.no_time:
        for store in data.node_stores:
            del store.time
    print(f'graph: {data.num_nodes} nodes, {data.num_edges} edges, '
          f'{len(data.edge_types)} edge types, classes {classes}; '
          f'built in {time.perf_counter() - t:.1f} s', flush=True)
    print('features: ' + ', '.join(f'{t} {data[t].x.shape[1]}' for t in data.node_types), flush=True)
    idx = {s: torch.from_numpy(np.nonzero(split == s)[0].astype(np.int64))
           for s in ('train', 'val', 'test')}

    t = time.perf_counter()
    train_ld = loader(data, idx['train'], cutoff, args, True)
    val_ld = loader(data, idx['val'], cutoff, args, False)
    test_ld = loader(data, idx['test'], cutoff, args, False)
    print(f'loaders (CSC conversion{"" if args.no_time else ", time sort"}): '
          f'{time.perf_counter() - t:.1f} s', flush=True)

    model = to_hetero(SAGE(args.hidden, len(classes), args.layers), data.metadata(),
                      aggr='sum').to(dev)
    with torch.no_grad():  # materialise the lazy (-1) input sizes
        b = next(iter(val_ld)).to(dev)
        model(b.x_dict, b.edge_index_dict)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        model.train()
        ts, tc, loss, acc = run_epoch(model, train_ld, dev, opt)
        model.eval()
        _, _, _, vacc = run_epoch(model, val_ld, dev)
        print(f'epoch {epoch}: {ts + tc:.2f} s/epoch (sampling {ts:.2f} s, compute {tc:.2f} s), '
              f'loss {loss:.4f}, train acc {acc:.4f}, val acc {vacc:.4f}', flush=True)
    model.eval()
    ts, tc, _, tacc = run_epoch(model, test_ld, dev)
    print(f'test accuracy {tacc:.4f} ({len(idx["test"])} customers; '
          f'inference sampling {ts:.2f} s, compute {tc:.2f} s)', flush=True)


if __name__ == '__main__':
    sys.exit(main())
