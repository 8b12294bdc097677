/*
 * partition.c: METIS k-way with balance constraints, a Fennel streaming
 * partitioner, random assignment, and partition statistics.
 */
#include "graph/partition.h"

#include <math.h>
#include <metis.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(idx_t) == sizeof(int32_t), "gnn expects METIS built with 32-bit idx_t");

void
gnn_partition_config_default(gnn_partition_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->parts = 2;
	cfg->method = GNN_PART_METIS;
	cfg->objective = GNN_PART_CUT;
	cfg->balance = GNN_BAL_NODES | GNN_BAL_TRAIN;
	cfg->imbalance = 0.03f;
	cfg->seed = 1;
	cfg->memory_limit = 0;
}

bool
gnn_parse_part_method(const char *s, gnn_part_method *out)
{
	if (!s)
		return false;
	if (strcmp(s, "metis") == 0)
		*out = GNN_PART_METIS;
	else if (strcmp(s, "streaming") == 0)
		*out = GNN_PART_STREAMING;
	else if (strcmp(s, "random") == 0)
		*out = GNN_PART_RANDOM;
	else
		return false;
	return true;
}

bool
gnn_parse_part_objective(const char *s, gnn_part_objective *out)
{
	if (!s)
		return false;
	if (strcmp(s, "cut") == 0)
		*out = GNN_PART_CUT;
	else if (strcmp(s, "volume") == 0)
		*out = GNN_PART_VOLUME;
	else
		return false;
	return true;
}

static const char *const balance_names[GNN_BAL_COUNT] = {"nodes", "train", "edges"};

bool
gnn_parse_part_balance(const char *s, uint32_t *bit)
{
	for (int i = 0; s && i < GNN_BAL_COUNT; i++)
		if (strcmp(s, balance_names[i]) == 0)
		{
			*bit = 1u << i;
			return true;
		}
	return false;
}

const char *
gnn_part_balance_name(int i)
{
	return i >= 0 && i < GNN_BAL_COUNT ? balance_names[i] : "?";
}

const char *
gnn_part_method_name(gnn_part_method m)
{
	switch (m)
	{
		case GNN_PART_METIS:
			return "metis";
		case GNN_PART_STREAMING:
			return "streaming";
		case GNN_PART_RANDOM:
			return "random";
	}
	return "?";
}

/* Out- and in-neighbours of v merged (both sorted), self loop dropped; returns count. */
static int64_t
merge_neighbours(const gnn_graph *g, int64_t v, int32_t *out)
{
	int64_t		a = g->indptr[v],
				ae = g->indptr[v + 1],
				b = g->rindptr[v],
				be = g->rindptr[v + 1],
				k = 0;

	while (a < ae || b < be)
	{
		int32_t		x;

		if (b >= be || (a < ae && g->indices[a] < g->rindices[b]))
			x = g->indices[a++];
		else if (a >= ae || g->rindices[b] < g->indices[a])
			x = g->rindices[b++];
		else
		{
			x = g->indices[a++];
			b++;
		}
		if (x != v)
		{
			if (out)
				out[k] = x;
			k++;
		}
	}
	return k;
}

gnn_status
gnn_graph_symmetrise(const gnn_graph *g, int64_t **xadj_out, int32_t **adj_out, gnn_error *err)
{
	int64_t		n = g->num_nodes;
	int64_t    *xadj = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *adj;

	*xadj_out = NULL;
	*adj_out = NULL;
	if (!xadj)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory symmetrising %lld nodes", (long long) n);
	xadj[0] = 0;
	for (int64_t v = 0; v < n; v++)
		xadj[v + 1] = xadj[v] + merge_neighbours(g, v, NULL);
	adj = malloc(sizeof(int32_t) * (xadj[n] + 1));
	if (!adj)
	{
		long long	entries = (long long) xadj[n];

		free(xadj);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory symmetrising %lld adjacency entries", entries);
	}
	for (int64_t v = 0; v < n; v++)
		merge_neighbours(g, v, adj + xadj[v]);
	*xadj_out = xadj;
	*adj_out = adj;
	return GNN_OK;
}

static int
count_constraints(uint32_t balance)
{
	int			c = 0;

	for (int i = 0; i < GNN_BAL_COUNT; i++)
		c += (balance >> i) & 1;
	return c;
}

/*
 * METIS 5.1 k-way: the caller's graph (xadj, adjncy, vwgt), a copy with edge
 * weights per coarsening level (about halving each time, so twice the input
 * in all), per-vertex work arrays, plus our symmetrised copy in 64-bit
 * offsets, times 3 to match the peak RSS measured by bench/partition_bench.sh
 * (METIS's coarsening and refinement buffers are larger than the graph copies).
 */
uint64_t
gnn_partition_metis_memory(const gnn_graph *g, int32_t parts, uint32_t balance)
{
	uint64_t	n = (uint64_t) g->num_nodes;
	uint64_t	adj = 2 * (uint64_t) g->num_edges;	/* upper bound on symmetric entries */
	uint64_t	ncon = (uint64_t) (count_constraints(balance ? balance : GNN_BAL_NODES));
	uint64_t	ours = 8 * (n + 1) + 4 * adj + 4 * (n + 1) + 4 * n * ncon + 4 * n;
	uint64_t	level = 4 * (n + 1) + 8 * adj + 4 * n * ncon + 4 * n * 4;

	/* x3: measured 7.2 GB above the graph for METIS at 2.5M nodes / 57.9M arcs, 4 parts, 2 constraints */
	return 3 * (ours + 2 * level + 4 * n * 8 + 8 * (uint64_t) parts * ncon * 64);
}

static gnn_status
check_config(const gnn_graph *g, const gnn_partition_config *cfg, gnn_error *err)
{
	if (g->num_nodes < 2)
		return gnn_error_set(err, GNN_ERR_INVALID, "a graph with %lld nodes cannot be partitioned",
							 (long long) g->num_nodes);
	if (cfg->parts < 2 || cfg->parts > g->num_nodes)
		return gnn_error_set(err, GNN_ERR_INVALID, "parts must be between 2 and the number of nodes (%lld), got %d",
							 (long long) g->num_nodes, cfg->parts);
	if (cfg->method != GNN_PART_METIS && cfg->method != GNN_PART_STREAMING && cfg->method != GNN_PART_RANDOM)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown partitioning method %d (accepted: metis, streaming, random)",
							 (int) cfg->method);
	if (cfg->objective != GNN_PART_CUT && cfg->objective != GNN_PART_VOLUME)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown objective %d (accepted: cut, volume)", (int) cfg->objective);
	if (cfg->balance & ~((1u << GNN_BAL_COUNT) - 1))
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown balance constraint bits 0x%x (accepted: nodes, train, edges)",
							 cfg->balance);
	if (!(cfg->imbalance >= 0.0f && cfg->imbalance <= 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "imbalance must be in [0, 1], got %g", cfg->imbalance);
	if ((cfg->balance & GNN_BAL_TRAIN) && (!g->split || g->n_train == 0))
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no training nodes to balance on");
	if (g->num_nodes > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "graphs over %d nodes are not supported", INT32_MAX);
	return GNN_OK;
}

/* per-node weight of constraint i (0 nodes, 1 train, 2 degree) */
static inline int64_t
node_weight(const gnn_graph *g, int64_t v, int i, int64_t sym_degree)
{
	switch (i)
	{
		case 0:
			return 1;
		case 1:
			return g->split && g->split[v] == GNN_SPLIT_TRAIN;
		default:
			return sym_degree;
	}
}

static gnn_status
partition_metis(const gnn_graph *g, const gnn_partition_config *cfg, int32_t *part, gnn_error *err)
{
	uint32_t	bal = cfg->balance ? cfg->balance : GNN_BAL_NODES;
	idx_t		n = (idx_t) g->num_nodes;
	idx_t		ncon = count_constraints(bal);
	idx_t		nparts = cfg->parts;
	idx_t		objval = 0;
	idx_t		options[METIS_NOPTIONS];
	real_t		ubvec[GNN_BAL_COUNT];
	int64_t    *xadj64 = NULL;
	int32_t    *adj = NULL;
	idx_t	   *xadj = NULL,
			   *vwgt = NULL;
	gnn_status	st = GNN_OK;
	int			rc;

	if ((st = gnn_graph_symmetrise(g, &xadj64, &adj, err)) != GNN_OK)
		return st;
	if (xadj64[n] > INT32_MAX)
	{
		st = gnn_error_set(err, GNN_ERR_LIMIT,
						   "the symmetric graph has %lld adjacency entries, more than METIS's 32-bit indices hold; use method streaming",
						   (long long) xadj64[n]);
		goto done;
	}
	xadj = malloc(sizeof(idx_t) * (n + 1));
	vwgt = malloc(sizeof(idx_t) * ((size_t) n * ncon + 1));
	if (!xadj || !vwgt)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing METIS input");
		goto done;
	}
	for (idx_t v = 0; v <= n; v++)
		xadj[v] = (idx_t) xadj64[v];
	for (idx_t v = 0; v < n; v++)
	{
		int			c = 0;

		for (int i = 0; i < GNN_BAL_COUNT; i++)
			if (bal & (1u << i))
				vwgt[(size_t) v * ncon + c++] = (idx_t) node_weight(g, v, i, xadj[v + 1] - xadj[v]);
	}
	free(xadj64);
	xadj64 = NULL;
	for (int i = 0; i < ncon; i++)
		ubvec[i] = 1.0f + (cfg->imbalance > 0 ? cfg->imbalance : 0.001f);

	METIS_SetDefaultOptions(options);
	options[METIS_OPTION_OBJTYPE] = cfg->objective == GNN_PART_VOLUME ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
	options[METIS_OPTION_SEED] = (idx_t) (cfg->seed & 0x7fffffff);
	options[METIS_OPTION_NUMBERING] = 0;
	rc = METIS_PartGraphKway(&n, &ncon, xadj, adj, vwgt, NULL, NULL, &nparts, NULL, ubvec,
							 options, &objval, part);
	if (rc == METIS_ERROR_MEMORY)
		st = gnn_error_set(err, GNN_ERR_NOMEM, "METIS ran out of memory");
	else if (rc == METIS_ERROR_INPUT)
		st = gnn_error_set(err, GNN_ERR_INVALID, "METIS rejected its input");
	else if (rc != METIS_OK)
		st = gnn_error_set(err, GNN_ERR_BACKEND, "METIS failed (code %d)", rc);
done:
	free(xadj64);
	free(adj);
	free(xadj);
	free(vwgt);
	return st;
}

/*
 * Fennel (Tsourakakis et al., WSDM 2014): place v in the part maximising
 * |N(v) ∩ P_i| - alpha * gamma * |P_i|^(gamma-1), gamma = 1.5,
 * alpha = sqrt(k) m / n^1.5, among parts under every capacity
 * (1 + imbalance, at least 5%, times the mean).  Neighbours are out- and
 * in-arcs as stored (a reciprocal pair counts twice).
 */
static gnn_status
partition_streaming(const gnn_graph *g, const gnn_partition_config *cfg, int32_t *part, gnn_error *err)
{
	int64_t		n = g->num_nodes;
	int32_t		k = cfg->parts;
	uint32_t	bal = cfg->balance ? cfg->balance : GNN_BAL_NODES;
	double		nu = 1.0 + (cfg->imbalance > 0.05f ? cfg->imbalance : 0.05f);
	double		m = (double) g->num_edges / 2.0;
	double		alpha = sqrt((double) k) * m / pow((double) n, 1.5);
	double		total[GNN_BAL_COUNT] = {0, 0, 0};
	double		cap[GNN_BAL_COUNT];
	int64_t    *load = calloc((size_t) k * GNN_BAL_COUNT, sizeof(int64_t));
	int64_t    *cnt = calloc(k, sizeof(int64_t));
	int32_t    *touched = malloc(sizeof(int32_t) * (k + 1));

	if (!load || !cnt || !touched)
	{
		free(load);
		free(cnt);
		free(touched);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	if (alpha <= 0)
		alpha = 1e-9;
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		d = gnn_graph_out_degree(g, v) + gnn_graph_in_degree(g, v);

		for (int i = 0; i < GNN_BAL_COUNT; i++)
			total[i] += (double) node_weight(g, v, i, d);
	}
	for (int i = 0; i < GNN_BAL_COUNT; i++)
		cap[i] = nu * total[i] / k + (i == 2 ? (double) total[i] / n * 4 : 1.0);

	for (int64_t v = 0; v < n; v++)
	{
		int			nt = 0;
		int64_t		d = gnn_graph_out_degree(g, v) + gnn_graph_in_degree(g, v);
		int64_t		w[GNN_BAL_COUNT];
		int32_t		best = -1;
		double		best_score = -INFINITY;

		for (int i = 0; i < GNN_BAL_COUNT; i++)
			w[i] = node_weight(g, v, i, d);
		for (int pass = 0; pass < 2; pass++)
		{
			const int64_t *ptr = pass ? g->rindptr : g->indptr;
			const int32_t *idx = pass ? g->rindices : g->indices;

			for (int64_t e = ptr[v]; e < ptr[v + 1]; e++)
			{
				int32_t		u = idx[e];

				if (u < v)		/* already placed */
				{
					int32_t		p = part[u];

					if (cnt[p]++ == 0)
						touched[nt++] = p;
				}
			}
		}
		for (int32_t p = 0; p < k; p++)
		{
			bool		fits = true;
			double		score;

			for (int i = 0; i < GNN_BAL_COUNT; i++)
				if ((bal & (1u << i)) && w[i] > 0 && load[(size_t) p * GNN_BAL_COUNT + i] + w[i] > cap[i])
					fits = false;
			if (!fits)
				continue;
			score = (double) cnt[p] - alpha * 1.5 * sqrt((double) load[(size_t) p * GNN_BAL_COUNT]);
			if (score > best_score)
			{
				best_score = score;
				best = p;
			}
		}
		if (best < 0)
		{
			/* every part is full on some constraint: the least loaded by nodes */
			best = 0;
			for (int32_t p = 1; p < k; p++)
				if (load[(size_t) p * GNN_BAL_COUNT] < load[(size_t) best * GNN_BAL_COUNT])
					best = p;
		}
		part[v] = best;
		for (int i = 0; i < GNN_BAL_COUNT; i++)
			load[(size_t) best * GNN_BAL_COUNT + i] += w[i];
		for (int t = 0; t < nt; t++)
			cnt[touched[t]] = 0;
	}
	free(load);
	free(cnt);
	free(touched);
	return GNN_OK;
}

gnn_status
gnn_partition_compute(const gnn_graph *g, const gnn_partition_config *cfg, int32_t *part,
					  double *seconds, gnn_error *err)
{
	gnn_status	st;
	double		t0 = gnn_now_s();

	if ((st = check_config(g, cfg, err)) != GNN_OK)
		return st;
	switch (cfg->method)
	{
		case GNN_PART_METIS:
			{
				uint64_t	need = gnn_partition_metis_memory(g, cfg->parts, cfg->balance);

				if (cfg->memory_limit > 0 && need > cfg->memory_limit)
				{
					st = gnn_error_set(err, GNN_ERR_LIMIT,
									   "METIS would need about %llu MB for this graph, over the limit of %llu MB",
									   (unsigned long long) ((need + 1048575) / 1048576),
									   (unsigned long long) (cfg->memory_limit / 1048576));
					err->id = (int64_t) need;
					return st;
				}
				st = partition_metis(g, cfg, part, err);
				break;
			}
		case GNN_PART_STREAMING:
			st = partition_streaming(g, cfg, part, err);
			break;
		default:
			{
				gnn_rng		rng;

				gnn_rng_seed(&rng, cfg->seed);
				for (int64_t v = 0; v < g->num_nodes; v++)
					part[v] = (int32_t) gnn_rng_below(&rng, (uint64_t) cfg->parts);
				st = GNN_OK;
			}
	}
	if (seconds)
		*seconds = gnn_now_s() - t0;
	return st;
}

void
gnn_part_stats_free(gnn_part_stats *st)
{
	if (st)
	{
		free(st->part);
		st->part = NULL;
	}
}

gnn_status
gnn_part_stats_compute(const gnn_graph *g, const int32_t *part, int32_t parts, gnn_part_stats *st,
					gnn_error *err)
{
	int64_t		n = g->num_nodes;
	int64_t    *start = NULL,
			   *order = NULL;
	int32_t    *mark = NULL;
	gnn_status	rc = GNN_OK;

	memset(st, 0, sizeof(*st));
	if (parts < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "parts must be >= 1, got %d", parts);
	st->parts = parts;
	st->part = calloc(parts, sizeof(gnn_part_info));
	start = calloc(parts + 1, sizeof(int64_t));
	order = malloc(sizeof(int64_t) * (n + 1));
	mark = malloc(sizeof(int32_t) * (n + 1));
	if (!st->part || !start || !order || !mark)
	{
		rc = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t v = 0; v < n; v++)
	{
		if (part[v] < 0 || part[v] >= parts)
		{
			rc = gnn_error_set(err, GNN_ERR_INVALID, "node %lld is in part %d, outside [0, %d)",
							   (long long) v, part[v], parts);
			goto done;
		}
		start[part[v] + 1]++;
	}
	for (int32_t p = 0; p < parts; p++)
		start[p + 1] += start[p];
	for (int64_t v = 0; v < n; v++)
		order[start[part[v]]++] = v;
	for (int32_t p = parts; p > 0; p--)
		start[p] = start[p - 1];
	start[0] = 0;
	memset(mark, 0xff, sizeof(int32_t) * (n + 1));

	for (int32_t p = 0; p < parts; p++)
	{
		gnn_part_info *pi = &st->part[p];

		for (int64_t k = start[p]; k < start[p + 1]; k++)
		{
			int64_t		v = order[k];

			pi->nodes++;
			pi->train += g->split && g->split[v] == GNN_SPLIT_TRAIN;
			for (int pass = 0; pass < 2; pass++)
			{
				const int64_t *ptr = pass ? g->rindptr : g->indptr;
				const int32_t *idx = pass ? g->rindices : g->indices;

				for (int64_t e = ptr[v]; e < ptr[v + 1]; e++)
				{
					int32_t		u = idx[e];

					if (u == v)
						continue;
					pi->degree++;
					if (pass == 0)
					{
						pi->edges++;
						pi->cut += part[u] != p;
					}
					if (part[u] != p && mark[u] != p)
					{
						mark[u] = p;
						pi->halo++;
					}
				}
			}
		}
		st->edges += pi->edges;
		st->cut += pi->cut;
		st->halo += pi->halo;
	}
	st->cut_fraction = st->edges ? (double) st->cut / (double) st->edges : 0.0;
	for (int i = 0; i < GNN_BAL_COUNT; i++)
	{
		double		sum = 0,
					max = 0;

		for (int32_t p = 0; p < parts; p++)
		{
			double		x = i == 0 ? st->part[p].nodes : i == 1 ? st->part[p].train : st->part[p].degree;

			sum += x;
			max = x > max ? x : max;
		}
		st->balance[i] = sum > 0 ? max / (sum / parts) : 0.0;
	}
done:
	free(start);
	free(order);
	free(mark);
	if (rc != GNN_OK)
		gnn_part_stats_free(st);
	return rc;
}
