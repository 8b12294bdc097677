/*
 * safetensors.h: models in and out as safetensors (Hugging Face's format:
 * an 8-byte little-endian header length, a JSON header naming each
 * tensor's dtype, shape and byte range, then the raw little-endian data),
 * the format PyTorch users exchange weights in.
 *
 * Module layout.  GCN, GraphSAGE (mean) and node2vec models are written
 * with the names and shapes of PyG's modules, so that
 * torch_geometric.nn.models.GCN / GraphSAGE(in, hidden, layers, out) and
 * Node2Vec load them with load_state_dict:
 *   GCN        convs.{l}.lin.weight [out x in] (our W transposed), convs.{l}.bias [out]
 *   GraphSAGE  convs.{l}.lin_l.weight [out x in] (the neighbours' W), convs.{l}.lin_l.bias [out],
 *              convs.{l}.lin_r.weight [out x in] (the root's W)
 *   node2vec   embedding.weight [nodes x dim]
 * Every other model (GAT, pooled GraphSAGE, R-GCN, heterogeneous GraphSAGE)
 * is written in gnn's own layout: its parameters by gnn's names
 * ("l{l}.{weight,root,bias,...}") and gnn's shapes [rows x cols], as the
 * serialised blob holds them.  The header's __metadata__ says which
 * ("layout": "pyg" or "gnn") and the architecture ("model", "in_dim",
 * "hidden", "out_dim", "layers", "aggr", "heads", "out_heads",
 * "num_relations", "num_node_types", "num_bases"), all as strings.
 *
 * Reading validates everything before trusting anything: the header length
 * against the blob, the JSON (strings, integers, objects and arrays only, a
 * bounded depth), every tensor's dtype (F32 only), shape (1 or 2 dims) and
 * byte range (inside the data, exactly its size, no two overlapping), the
 * names against the layout, the shapes against one another (each layer's
 * input the previous layer's output) and the values (finite).  Any failure
 * is GNN_ERR_CORRUPT (a malformed blob) or GNN_ERR_DIMENSION (well formed,
 * but not a model of that shape), with a message naming the tensor.
 */
#ifndef GNN_SAFETENSORS_H
#define GNN_SAFETENSORS_H

#include "nn/model.h"

#define GNN_ST_MAX_HEADER (16 << 20)	/* header bytes accepted */
#define GNN_ST_MAX_META 64

typedef struct gnn_st_meta
{
	int			n;
	char	   *key[GNN_ST_MAX_META];
	char	   *val[GNN_ST_MAX_META];
} gnn_st_meta;

/*
 * m as safetensors (malloc'd, free with free()), with extra string
 * metadata (keys and values, n of them; NULL / 0: none).
 */
gnn_status	gnn_model_to_safetensors(gnn_model *m, const char *const *keys, const char *const *vals, int n,
									 void **blob, size_t *size, gnn_error *err);

/*
 * A model built on be from a safetensors blob in either layout (the
 * architecture from the names and shapes, and from __metadata__ where the
 * names cannot say: GAT's heads, relational counts).  *meta (may be NULL)
 * gets the header's metadata (free with gnn_st_meta_free).
 */
gnn_status	gnn_model_from_safetensors(gnn_backend *be, const void *blob, size_t size, gnn_model **out,
									   gnn_st_meta *meta, gnn_error *err);
const char *gnn_st_meta_get(const gnn_st_meta *meta, const char *key);
void		gnn_st_meta_free(gnn_st_meta *meta);

#endif							/* GNN_SAFETENSORS_H */
