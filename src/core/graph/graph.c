/*
 * graph.c: COO -> CSR (+ reverse CSR), laid out in one region with offsets.
 *
 * Steps: find the node set (a bitmap over the id range when ids are dense,
 * as serial keys are; a radix sort otherwise), map original ids to dense
 * indices (a direct table, or an open-addressing hash), sort the edges by
 * (source, destination) with two stable parallel counting sorts, merge
 * duplicates (weights summed), and only then, with the exact size known, ask
 * for the region and write the CSR, its transpose and the node data straight
 * into it.  Memory first touched is slow on some machines, so every byte of
 * output is written once, into the region, and temporaries are few.
 *
 * Typed input (node and edge types, graph.h) arrives with node indices
 * already assigned, so mapping is a check of each edge's relation and
 * endpoint types; the edges are then grouped by relation before the two
 * stable sorts, which leaves every row ordered by neighbour and then
 * relation, and duplicates merge only within a relation.  A homogeneous
 * input takes none of these steps: its build is the version 1 build.
 */
#include "graph/graph_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------------ id map */

typedef struct idmap
{
	int64_t		n;
	const int64_t *sorted;		/* ascending unique ids */
	/* direct table: index = table[id - base], -1 absent */
	int64_t		base;
	int64_t		range;
	int32_t    *table;
	/* hash: open addressing over sorted positions */
	uint64_t	mask;
	int32_t    *slots;			/* position + 1, 0 = empty */
} idmap;


static gnn_status
idmap_init(idmap *map, const int64_t *sorted, int64_t n, gnn_error *err)
{
	memset(map, 0, sizeof(*map));
	map->n = n;
	map->sorted = sorted;
	if (n == 0)
		return GNN_OK;
	map->base = sorted[0];
	/* range computed in unsigned arithmetic: ids may span all of int64 */
	uint64_t	span = (uint64_t) sorted[n - 1] - (uint64_t) sorted[0];

	if (span < (uint64_t) 4 * (uint64_t) n + 1024)
	{
		map->range = (int64_t) span + 1;
		map->table = gnn_malloc_big(sizeof(int32_t) * map->range);
		if (!map->table)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the id map (%lld entries)",
								 (long long) map->range);
		memset(map->table, 0xff, sizeof(int32_t) * map->range);
		for (int64_t i = 0; i < n; i++)
			map->table[(uint64_t) sorted[i] - (uint64_t) map->base] = (int32_t) i;
		return GNN_OK;
	}
	uint64_t	cap = 16;

	while (cap < (uint64_t) n * 2)
		cap <<= 1;
	map->mask = cap - 1;
	/* at most half full: the inserts touch every page, so zero it in huge pages */
	map->slots = gnn_malloc_big(cap * sizeof(int32_t));
	if (!map->slots)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the id hash (%llu slots)",
							 (unsigned long long) cap);
	memset(map->slots, 0, cap * sizeof(int32_t));
	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	h = gnn_mix64((uint64_t) sorted[i]) & map->mask;

		while (map->slots[h])
			h = (h + 1) & map->mask;
		map->slots[h] = (int32_t) (i + 1);
	}
	return GNN_OK;
}

static inline int64_t
idmap_find(const idmap *map, int64_t id)
{
	if (map->table)
	{
		uint64_t	off = (uint64_t) id - (uint64_t) map->base;

		if (id < map->base || off >= (uint64_t) map->range)
			return -1;
		return map->table[off];
	}
	if (!map->slots)
		return -1;
	uint64_t	h = gnn_mix64((uint64_t) id) & map->mask;

	for (;;)
	{
		int32_t		s = map->slots[h];

		if (s == 0)
			return -1;
		if (map->sorted[s - 1] == id)
			return s - 1;
		h = (h + 1) & map->mask;
	}
}

static void
idmap_free(idmap *map)
{
	free(map->table);
	free(map->slots);
}

/* ------------------------------------------------------------------ sorting */

/* LSD radix sort of int64 keys (sign-flipped to sort as unsigned), 16-bit digits. */
static gnn_status radix_sort_i64(int64_t *a, int64_t n, gnn_error *err);

gnn_status
gnn_sort_i64(int64_t *a, int64_t n, gnn_error *err)
{
	return radix_sort_i64(a, n, err);
}

static gnn_status
radix_sort_i64(int64_t *a, int64_t n, gnn_error *err)
{
	if (n < 2)
		return GNN_OK;
	uint64_t   *x = (uint64_t *) a;
	uint64_t   *tmp = gnn_malloc_big(sizeof(uint64_t) * n);
	size_t	   *cnt = malloc(sizeof(size_t) * 65536);

	if (!tmp || !cnt)
	{
		free(tmp);
		free(cnt);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sorting %lld ids", (long long) n);
	}
	for (int64_t i = 0; i < n; i++)
		x[i] ^= 0x8000000000000000ULL;
	uint64_t	lo = UINT64_MAX,
				hi = 0;

	for (int64_t i = 0; i < n; i++)
	{
		if (x[i] < lo)
			lo = x[i];
		if (x[i] > hi)
			hi = x[i];
	}
	uint64_t	diff = lo ^ hi;
	uint64_t   *src = x,
			   *dst = tmp;

	for (int shift = 0; shift < 64; shift += 16)
	{
		if ((diff >> shift) == 0)
			break;
		if (((diff >> shift) & 0xffff) == 0)
			continue;			/* digit constant across all keys */
		memset(cnt, 0, sizeof(size_t) * 65536);
		for (int64_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 0xffff]++;
		size_t		sum = 0;

		for (int d = 0; d < 65536; d++)
		{
			size_t		c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 0xffff]++] = src[i];
		uint64_t   *t = src;

		src = dst;
		dst = t;
	}
	if (src != x)
		memcpy(x, src, sizeof(uint64_t) * n);
	for (int64_t i = 0; i < n; i++)
		x[i] ^= 0x8000000000000000ULL;
	free(tmp);
	free(cnt);
	return GNN_OK;
}

/* ------------------------------------------------------------------ counting sort */

static int
nthreads_of(const gnn_graph_input *in)
{
#ifdef _OPENMP
	return in->nthreads > 0 ? in->nthreads : omp_get_max_threads();
#else
	return 1;
#endif
}

/*
 * Stable counting sort of m items by key (0..nb-1), in parallel: each thread
 * counts its contiguous chunk, offsets are laid out bucket-major then
 * thread-major, and each thread scatters its chunk in order, so equal keys
 * keep their input order.  Outputs: key_out (optional), pay_out, w_out
 * (when w), rel_out (when rel: the relation of each item, typed graphs),
 * starts[nb+1] (optional).
 */
gnn_status
gnn_graph_counting_sort(int64_t m, int64_t nb, const int32_t *key, const int32_t *pay, const float *w,
			  const int16_t *rel, int32_t *key_out, int32_t *pay_out, float *w_out,
			  int16_t *rel_out, int64_t *starts, int T, gnn_error *err)
{
	if (T < 1)
		T = 1;
	if (m < 65536)
		T = 1;
	int64_t    *off = gnn_malloc_big(sizeof(int64_t) * ((size_t) T * (size_t) nb + 1));

	if (!off)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sorting %lld edges", (long long) m);
	memset(off, 0, sizeof(int64_t) * (size_t) T * (size_t) nb);
#pragma omp parallel num_threads(T)
	{
#ifdef _OPENMP
		int			t = omp_get_thread_num();
		int			nt = omp_get_num_threads();
#else
		int			t = 0,
					nt = 1;
#endif
		int64_t		lo = m * t / nt,
					hi = m * (t + 1) / nt;
		int64_t    *h = off + (size_t) t * nb;

		for (int64_t i = lo; i < hi; i++)
			h[key[i]]++;
#pragma omp barrier
#pragma omp single
		{
			int64_t		run = 0;

			for (int64_t b = 0; b < nb; b++)
			{
				if (starts)
					starts[b] = run;
				for (int tt = 0; tt < nt; tt++)
				{
					int64_t		c = off[(size_t) tt * nb + b];

					off[(size_t) tt * nb + b] = run;
					run += c;
				}
			}
			if (starts)
				starts[nb] = run;
		}
		for (int64_t i = lo; i < hi; i++)
		{
			int64_t		p = h[key[i]]++;

			pay_out[p] = pay[i];
			if (key_out)
				key_out[p] = key[i];
			if (w)
				w_out[p] = w[i];
			if (rel)
				rel_out[p] = rel[i];
		}
	}
	free(off);
	return GNN_OK;
}

/* ------------------------------------------------------------------ layout */

/* sizes of each array (0: absent); present[] marks arrays that exist even when empty */
void
gnn_graph_compute_layout(const uint64_t *sz, const bool *present, layout *l)
{
	uint64_t	pos = ALIGN64(sizeof(gnn_graph_header));

	for (int i = 0; i < L_COUNT; i++)
	{
		l->off[i] = (present[i] || sz[i] > 0) ? pos : 0;
		pos = ALIGN64(pos + sz[i]);
	}
	l->total = pos;
}

void
gnn_graph_header_from_layout(gnn_graph_header *h, const layout *l, const uint64_t *sz)
{
	memset(h, 0, sizeof(*h));
	/*
	 * and the padding after the header and after each array: a region's
	 * bytes then depend on its contents alone (a malloc'ed region is not
	 * zeroed, and its stored file and digest would differ between two
	 * builds of the same graph)
	 */
	{
		char	   *base = (char *) h;
		uint64_t	hend = sizeof(*h);

		memset(base + hend, 0, ALIGN64(hend) - hend);
		for (int i = 0; i < L_COUNT; i++)
			if (l->off[i] != 0)
				memset(base + l->off[i] + sz[i], 0, ALIGN64(l->off[i] + sz[i]) - (l->off[i] + sz[i]));
	}
	h->magic = GNN_GRAPH_MAGIC;
	h->version = GNN_GRAPH_VERSION;
	h->total_bytes = l->total;
	h->off_ids = l->off[L_IDS];
	h->off_indptr = l->off[L_INDPTR];
	h->off_indices = l->off[L_INDICES];
	h->off_weights = l->off[L_WEIGHTS];
	h->off_rindptr = l->off[L_RINDPTR];
	h->off_rindices = l->off[L_RINDICES];
	h->off_rweights = l->off[L_RWEIGHTS];
	h->off_feat = l->off[L_FEAT];
	h->off_fptr = l->off[L_FPTR];
	h->off_fidx = l->off[L_FIDX];
	h->off_fval = l->off[L_FVAL];
	h->off_labels = l->off[L_LABELS];
	h->off_split = l->off[L_SPLIT];
	h->off_class_names = l->off[L_CLASSES];
	h->class_names_bytes = sz[L_CLASSES];
	h->off_type_ptr = l->off[L_TYPE_PTR];
	h->off_node_type = l->off[L_NODE_TYPE];
	h->off_etypes = l->off[L_ETYPES];
	h->off_arc_type = l->off[L_ARC_TYPE];
	h->off_rarc_type = l->off[L_RARC_TYPE];
	h->off_type_names = l->off[L_TYPE_NAMES];
	h->type_names_bytes = sz[L_TYPE_NAMES];
	h->off_keys = l->off[L_KEYS];
	h->off_key_off = l->off[L_KEY_OFF];
	h->off_key_bytes = l->off[L_KEY_BYTES];
	h->key_bytes = sz[L_KEY_BYTES];
	h->off_type_text_key = l->off[L_TYPE_TEXT_KEY];
	h->off_time = l->off[L_TIME];
	h->off_seed_time = l->off[L_SEED_TIME];
	h->off_targets = l->off[L_TARGETS];
	h->off_meta = l->off[L_META];
	h->meta_bytes = sz[L_META];
	h->off_arc_rows = l->off[L_ARC_ROWS];
	h->off_part = l->off[L_PART];
}

uint64_t
gnn_graph_header_checksum(const gnn_graph_header *h)
{
	/* the header bytes before the checksum field */
	return gnn_graph_fnv1a(h, offsetof(gnn_graph_header, checksum));
}

uint64_t
gnn_graph_fnv1a(const void *bytes, size_t n)
{
	const unsigned char *p = bytes;
	uint64_t	x = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
	{
		x ^= p[i];
		x *= 0x100000001b3ULL;
	}
	return x;
}

/* ------------------------------------------------------------------ build */

#define FAIL(st, ...) do { status = gnn_error_set(err, (st), __VA_ARGS__); goto done; } while (0)

/* input edge e's endpoints, from the 64-bit or the 32-bit arrays */
static inline int64_t
in_src(const gnn_graph_input *in, int64_t e)
{
	return in->src32 ? (int64_t) in->src32[e] : in->src[e];
}

static inline int64_t
in_dst(const gnn_graph_input *in, int64_t e)
{
	return in->dst32 ? (int64_t) in->dst32[e] : in->dst[e];
}

/* The node set from the edge endpoints: sorted unique ids (malloc'd). */
static gnn_status
endpoint_ids(const gnn_graph_input *in, int64_t **ids_out, int64_t *n_out, gnn_error *err)
{
	int64_t		m = in->num_edges;
	int64_t		lo = INT64_MAX,
				hi = INT64_MIN;

	*ids_out = NULL;
	*n_out = 0;
	if (m == 0)
	{
		*ids_out = malloc(sizeof(int64_t));
		return *ids_out ? GNN_OK : gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
#pragma omp parallel for reduction(min:lo) reduction(max:hi) schedule(static)
	for (int64_t e = 0; e < m; e++)
	{
		int64_t		a = in_src(in, e),
					b = in_dst(in, e);

		lo = a < lo ? a : lo;
		lo = b < lo ? b : lo;
		hi = a > hi ? a : hi;
		hi = b > hi ? b : hi;
	}
	uint64_t	span = (uint64_t) hi - (uint64_t) lo;

	if (span < (uint64_t) 2 * (uint64_t) m + 1024 && span < ((uint64_t) 1 << 34))
	{
		/* dense ids: a presence bitmap over [lo, hi], read out in order */
		uint64_t	words = span / 64 + 1;
		uint64_t   *bits = calloc(words, sizeof(uint64_t));

		if (!bits)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the node set");
		for (int64_t e = 0; e < m; e++)
		{
			uint64_t	a = (uint64_t) in_src(in, e) - (uint64_t) lo,
						b = (uint64_t) in_dst(in, e) - (uint64_t) lo;

			bits[a >> 6] |= (uint64_t) 1 << (a & 63);
			bits[b >> 6] |= (uint64_t) 1 << (b & 63);
		}
		int64_t		n = 0;

		for (uint64_t w = 0; w < words; w++)
			n += __builtin_popcountll(bits[w]);
		int64_t    *ids = malloc(sizeof(int64_t) * n);

		if (!ids)
		{
			free(bits);
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld node ids", (long long) n);
		}
		int64_t		k = 0;

		for (uint64_t w = 0; w < words; w++)
		{
			uint64_t	x = bits[w];

			while (x)
			{
				int			b = __builtin_ctzll(x);

				ids[k++] = (int64_t) ((uint64_t) lo + w * 64 + (uint64_t) b);
				x &= x - 1;
			}
		}
		free(bits);
		*ids_out = ids;
		*n_out = n;
		return GNN_OK;
	}
	/* sparse ids: sort all endpoints, keep the unique ones */
	int64_t    *all = malloc(sizeof(int64_t) * (2 * m));

	if (!all)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld endpoints", (long long) (2 * m));
	for (int64_t e = 0; e < m; e++)
	{
		all[e] = in_src(in, e);
		all[m + e] = in_dst(in, e);
	}
	gnn_status	st = radix_sort_i64(all, 2 * m, err);

	if (st != GNN_OK)
	{
		free(all);
		return st;
	}
	int64_t		k = 0;

	for (int64_t i = 0; i < 2 * m; i++)
		if (k == 0 || all[k - 1] != all[i])
			all[k++] = all[i];
	int64_t    *ids = realloc(all, sizeof(int64_t) * (k ? k : 1));

	if (!ids)
	{
		free(all);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	*ids_out = ids;
	*n_out = k;
	return GNN_OK;
}

/* ------------------------------------------------------------------ types */

/* What the type checks learnt about a typed (or keyed) input. */
typedef struct typeinfo
{
	int32_t		nt;				/* node types, >= 1 */
	int32_t		nr;				/* relations, >= 1 */
	bool		typed;			/* nt > 1 || nr > 1 */
	bool		indexed;		/* node ids must be 0..n-1: typed, or keys given */
	bool		has_time;		/* some node has a time */
	bool		has_seed_time;	/* some node has a seed time */
	bool		has_targets;	/* some node has a regression target */
	uint64_t	names_bytes;	/* the type names up to the last one's NUL */
	int64_t		type_ptr[GNN_MAX_NODE_TYPES + 1];
	int64_t		rel_count[GNN_MAX_EDGE_TYPES];
} typeinfo;

/* Name number idx (node types, then relations) of the input, or NULL. */
static const char *
input_name(const gnn_graph_input *in, int32_t idx)
{
	const char *p = in->type_names,
			   *end;

	if (!p)
		return NULL;
	end = p + in->type_names_bytes;
	for (int32_t i = 0; p < end; i++)
	{
		const char *nul = memchr(p, '\0', end - p);

		if (!nul)
			return NULL;
		if (i == idx)
			return p;
		p = nul + 1;
	}
	return NULL;
}

/* ` ("name")` for messages, or "" when the input has no names. */
static const char *
name_note(const gnn_graph_input *in, int32_t idx, char *buf, size_t size)
{
	const char *name = input_name(in, idx);

	if (!name)
		return "";
	snprintf(buf, size, " (\"%.48s\")", name);
	return buf;
}

static inline int32_t
input_type_of(const gnn_graph_input *in, const typeinfo *ti, int64_t row)
{
	return ti->nt > 1 ? in->node_type[row] : 0;
}

static inline bool
input_text_keyed(const gnn_graph_input *in, int32_t t)
{
	return in->key_off && (!in->type_text_key || in->type_text_key[t]);
}

/* memcmp order, the shorter key first on a common prefix */
static inline int
key_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int			c = memcmp(a, b, la < lb ? la : lb);

	if (c != 0 || la == lb)
		return c;
	return la < lb ? -1 : 1;
}

static gnn_status
row_error(gnn_error *err, int64_t row, int64_t id, gnn_status st)
{
	if (err)
	{
		err->row = row;
		err->id = id;
	}
	return st;
}

/*
 * The counts of types, the relations' endpoint types, the names, node ids
 * 0..n-1 and the node types of the rows (contiguous, in type order), which
 * give type_ptr.  Untyped, unkeyed input passes through untouched.
 */
static gnn_status
check_types(const gnn_graph_input *in, typeinfo *ti, gnn_error *err)
{
	int64_t		n = in->num_nodes;
	char		b1[64];

	memset(ti, 0, sizeof(*ti));
	if (in->num_node_types < 0 || in->num_node_types > GNN_MAX_NODE_TYPES)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d node types were given; at most %d are supported",
							 in->num_node_types, GNN_MAX_NODE_TYPES);
	if (in->num_edge_types < 0 || in->num_edge_types > GNN_MAX_EDGE_TYPES)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d edge types were given; at most %d are supported",
							 in->num_edge_types, GNN_MAX_EDGE_TYPES);
	ti->nt = in->num_node_types > 1 ? in->num_node_types : 1;
	ti->nr = in->num_edge_types > 1 ? in->num_edge_types : 1;
	ti->typed = ti->nt > 1 || ti->nr > 1;
	/* names, also of a homogeneous graph's one node type and one relation */
	if (in->type_names)
	{
		const char *last = input_name(in, ti->nt + ti->nr - 1);

		if (!last)
			return gnn_error_set(err, GNN_ERR_INVALID,
								 "type names are too few: %d node types and %d relations need %d NUL-terminated names",
								 ti->nt, ti->nr, ti->nt + ti->nr);
		ti->names_bytes = (uint64_t) (last - in->type_names) + strlen(last) + 1;
	}
	ti->indexed = ti->typed || in->keys || in->key_off;
	if (!ti->indexed)
		return GNN_OK;
	if (!in->node_ids)
		return gnn_error_set(err, GNN_ERR_INVALID, "typed or keyed graph input needs node rows (ids 0..n-1)");
	if (ti->typed && in->undirected)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "a typed graph cannot be undirected: give the reverse relations as edges");
	if (ti->nt > 1 && !in->node_type)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d node types but no node type per row", ti->nt);
	if (ti->nr > 1 && in->num_edges > 0 && !in->edge_type)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d edge types but no edge type per edge", ti->nr);
	if (ti->nt > 1 && (!in->etype_src || !in->etype_dst))
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "%d node types but the relations' endpoint types (etype_src, etype_dst) are missing",
							 ti->nt);
	for (int32_t r = 0; r < ti->nr && in->etype_src && in->etype_dst; r++)
		if (in->etype_src[r] < 0 || in->etype_src[r] >= ti->nt ||
			in->etype_dst[r] < 0 || in->etype_dst[r] >= ti->nt)
			return gnn_error_set(err, GNN_ERR_INVALID,
								 "relation %d%s joins node types %d -> %d; there are %d node types",
								 r, name_note(in, ti->nt + r, b1, sizeof(b1)),
								 in->etype_src[r], in->etype_dst[r], ti->nt);
	for (int64_t i = 0; i < n; i++)
		if (in->node_ids[i] != i)
			return row_error(err, i, in->node_ids[i],
							 gnn_error_set(err, GNN_ERR_INVALID,
										   "node row %lld has id %lld: typed or keyed input needs ids 0..n-1 in order",
										   (long long) i, (long long) in->node_ids[i]));
	if (ti->nt == 1)
	{
		ti->type_ptr[1] = n;
		return GNN_OK;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int32_t		t = in->node_type[i];

		if (t < 0 || t >= ti->nt)
			return row_error(err, i, i,
							 gnn_error_set(err, GNN_ERR_INVALID, "node row %lld has node type %d; there are %d node types",
										   (long long) i, t, ti->nt));
		if (i > 0 && t < in->node_type[i - 1])
			return row_error(err, i, i,
							 gnn_error_set(err, GNN_ERR_INVALID,
										   "node row %lld has node type %d after a row of type %d: each type's rows must be contiguous and in type order",
										   (long long) i, t, in->node_type[i - 1]));
		ti->type_ptr[t + 1]++;
	}
	for (int32_t t = 0; t < ti->nt; t++)
		ti->type_ptr[t + 1] += ti->type_ptr[t];
	return GNN_OK;
}

/* Keys ascend strictly within each type: integer keys, or text keys. */
static gnn_status
check_keys(const gnn_graph_input *in, const typeinfo *ti, gnn_error *err)
{
	int64_t		n = in->num_nodes;
	const int64_t *ko = in->key_off;
	char		b1[64];

	if (ko)
	{
		if (ko[0] != 0 || (ko[n] > 0 && !in->key_bytes))
			return gnn_error_set(err, GNN_ERR_INVALID, "text keys: the offsets must start at 0 and the bytes be given");
		for (int64_t i = 0; i < n; i++)
			if (ko[i + 1] < ko[i])
				return row_error(err, i, i,
								 gnn_error_set(err, GNN_ERR_INVALID, "text key offsets decrease at node row %lld",
											   (long long) i));
	}
	for (int32_t t = 0; t < ti->nt; t++)
	{
		bool		text = input_text_keyed(in, t);

		if (!text && !in->keys)
			continue;
		for (int64_t i = ti->type_ptr[t] + 1; i < ti->type_ptr[t + 1]; i++)
		{
			int			c;

			if (text)
				c = key_cmp(in->key_bytes + ko[i - 1], ko[i] - ko[i - 1], in->key_bytes + ko[i], ko[i + 1] - ko[i]);
			else
				c = in->keys[i - 1] < in->keys[i] ? -1 : in->keys[i - 1] > in->keys[i];
			if (c < 0)
				continue;
			if (text)
			{
				int			la = (int) (ko[i] - ko[i - 1]),
							lb = (int) (ko[i + 1] - ko[i]);

				if (c == 0)
					gnn_error_set(err, GNN_ERR_INVALID,
								  "text key \"%.*s\" appears twice in node type %d%s (node rows %lld and %lld)",
								  lb < 64 ? lb : 64, in->key_bytes + ko[i], t, name_note(in, t, b1, sizeof(b1)),
								  (long long) i - 1, (long long) i);
				else
					gnn_error_set(err, GNN_ERR_INVALID,
								  "text keys of node type %d%s must ascend: node row %lld has \"%.*s\" after \"%.*s\"",
								  t, name_note(in, t, b1, sizeof(b1)), (long long) i,
								  lb < 64 ? lb : 64, in->key_bytes + ko[i], la < 64 ? la : 64, in->key_bytes + ko[i - 1]);
			}
			else if (c == 0)
				gnn_error_set(err, GNN_ERR_INVALID, "integer key %lld appears twice in node type %d%s (node rows %lld and %lld)",
							  (long long) in->keys[i], t, name_note(in, t, b1, sizeof(b1)), (long long) i - 1,
							  (long long) i);
			else
				gnn_error_set(err, GNN_ERR_INVALID,
							  "integer keys of node type %d%s must ascend: node row %lld has %lld after %lld",
							  t, name_note(in, t, b1, sizeof(b1)), (long long) i, (long long) in->keys[i],
							  (long long) in->keys[i - 1]);
			return row_error(err, i, in->keys && !text ? in->keys[i] : i, GNN_ERR_INVALID);
		}
	}
	return GNN_OK;
}

/* Times and targets: are any there (an array of all-absent values is left out)? */
static gnn_status
check_node_values(const gnn_graph_input *in, int64_t n, typeinfo *ti, gnn_error *err)
{
	for (int64_t i = 0; in->node_time && i < n && !ti->has_time; i++)
		ti->has_time = in->node_time[i] != GNN_TIME_NONE;
	if (in->seed_time && !in->node_time)
		return gnn_error_set(err, GNN_ERR_INVALID, "seed times were given without node times");
	for (int64_t i = 0; in->seed_time && i < n && !ti->has_seed_time; i++)
		ti->has_seed_time = in->seed_time[i] != GNN_TIME_NONE;
	for (int64_t i = 0; in->targets && i < n; i++)
	{
		if (isinf(in->targets[i]))
			return row_error(err, i, in->node_ids ? in->node_ids[i] : i,
							 gnn_error_set(err, GNN_ERR_BAD_VALUE, "the target of node row %lld is %g",
										   (long long) i, (double) in->targets[i]));
		ti->has_targets |= !isnan(in->targets[i]);
	}
	return GNN_OK;
}

/*
 * Typed edges: src / dst are node indices already.  Check each edge's
 * relation and endpoint types, then write the kept edges grouped by relation
 * (a stable counting scatter), so that the two stable sorts by destination
 * and source that follow leave every row ordered by neighbour, then relation.
 */
static gnn_status
map_typed_edges(const gnn_graph_input *in, int64_t n, const typeinfo *ti, int32_t *esrc, int32_t *edst,
				float *ew, int16_t *erel, int64_t *m_out, gnn_error *err)
{
	int64_t		me = in->num_edges;
	int64_t		start[GNN_MAX_EDGE_TYPES + 1] = {0};
	char		b1[64],
				b2[64];

	for (int64_t e = 0; e < me; e++)
	{
		int64_t		s = in_src(in, e),
					d = in_dst(in, e);
		int32_t		r = ti->nr > 1 ? in->edge_type[e] : 0;

		if (r < 0 || r >= ti->nr)
			return row_error(err, e, s,
							 gnn_error_set(err, GNN_ERR_INVALID, "edge %lld (%lld -> %lld) has edge type %d; there are %d",
										   (long long) e, (long long) s, (long long) d, r, ti->nr));
		if (s < 0 || s >= n || d < 0 || d >= n)
		{
			int64_t		which = (s < 0 || s >= n) ? s : d;

			if (in->skip_dangling)
				continue;
			return row_error(err, e, which,
							 gnn_error_set(err, GNN_ERR_DANGLING,
										   "edge %lld -> %lld refers to node %lld, which is not in the node set",
										   (long long) s, (long long) d, (long long) which));
		}
		int32_t		ws = in->etype_src ? in->etype_src[r] : 0,
					wd = in->etype_dst ? in->etype_dst[r] : 0,
					ts = input_type_of(in, ti, s),
					td = input_type_of(in, ti, d);

		if (ts != ws || td != wd)
			return row_error(err, e, ts != ws ? s : d,
							 gnn_error_set(err, GNN_ERR_INVALID,
										   "edge %lld (%lld -> %lld) of relation %d%s has a %s of node type %d%s; the relation joins node types %d -> %d",
										   (long long) e, (long long) s, (long long) d, r,
										   name_note(in, ti->nt + r, b1, sizeof(b1)),
										   ts != ws ? "source" : "destination", ts != ws ? ts : td,
										   name_note(in, ts != ws ? ts : td, b2, sizeof(b2)), ws, wd));
		if (in->weight && !isfinite(in->weight[e]))
			return row_error(err, e, s,
							 gnn_error_set(err, GNN_ERR_BAD_VALUE, "edge %lld -> %lld has weight %g",
										   (long long) s, (long long) d, (double) in->weight[e]));
		start[r + 1]++;
	}
	for (int32_t r = 0; r < ti->nr; r++)
		start[r + 1] += start[r];
	*m_out = start[ti->nr];
	for (int64_t e = 0; e < me; e++)
	{
		int64_t		s = in_src(in, e),
					d = in_dst(in, e);
		int32_t		r = ti->nr > 1 ? in->edge_type[e] : 0;

		if (s < 0 || s >= n || d < 0 || d >= n)
			continue;			/* dangling, skipped */
		int64_t		p = start[r]++;

		esrc[p] = (int32_t) s;
		edst[p] = (int32_t) d;
		if (ew)
			ew[p] = in->weight[e];
		if (erel)
			erel[p] = (int16_t) r;
	}
	return GNN_OK;
}

/* The version 2 arrays: types, relations, names, keys, times, targets, meta. */
static void
write_types(const gnn_graph_input *in, const typeinfo *ti, int64_t n, int64_t m, const int16_t *arc_type,
			const int64_t *rowpos, char *region, const gnn_graph_header *h)
{
	gnn_edge_type *et = (gnn_edge_type *) (region + h->off_etypes);

	memcpy(region + h->off_type_ptr, ti->type_ptr, 8 * ((size_t) ti->nt + 1));
	if (h->off_node_type)
		memcpy(region + h->off_node_type, in->node_type, 2 * (size_t) n);
	for (int32_t r = 0; r < ti->nr; r++)
	{
		et[r].src_type = in->etype_src ? in->etype_src[r] : 0;
		et[r].dst_type = in->etype_dst ? in->etype_dst[r] : 0;
		et[r].count = ti->rel_count[r];
	}
	if (arc_type)
		memcpy(region + h->off_arc_type, arc_type, 2 * (size_t) m);
	if (h->type_names_bytes)
		memcpy(region + h->off_type_names, in->type_names, h->type_names_bytes);
	if (h->off_keys)
		memcpy(region + h->off_keys, in->keys, 8 * (size_t) n);
	if (h->off_key_off)
	{
		uint8_t    *tk = (uint8_t *) (region + h->off_type_text_key);

		memcpy(region + h->off_key_off, in->key_off, 8 * ((size_t) n + 1));
		if (h->key_bytes)
			memcpy(region + h->off_key_bytes, in->key_bytes, h->key_bytes);
		for (int32_t t = 0; t < ti->nt; t++)
			tk[t] = input_text_keyed(in, t);
	}
	/* rows out of id order (homogeneous graphs only) are permuted like the features */
	if (h->off_time)
	{
		int64_t    *tm = (int64_t *) (region + h->off_time);

		for (int64_t v = 0; v < n; v++)
			tm[v] = in->node_time[rowpos ? rowpos[v] : v];
	}
	if (h->off_seed_time)
	{
		int64_t    *st = (int64_t *) (region + h->off_seed_time);

		for (int64_t v = 0; v < n; v++)
			st[v] = in->seed_time[rowpos ? rowpos[v] : v];
	}
	if (h->off_targets)
	{
		float	   *tg = (float *) (region + h->off_targets);

		for (int64_t v = 0; v < n; v++)
			tg[v] = in->targets[rowpos ? rowpos[v] : v];
	}
	if (h->meta_bytes)
		memcpy(region + h->off_meta, in->meta, h->meta_bytes);
	if (h->off_part)
	{
		int32_t    *pt = (int32_t *) (region + h->off_part);

		for (int64_t v = 0; v < n; v++)
			pt[v] = in->node_part[rowpos ? rowpos[v] : v];
	}
}

/* ------------------------------------------------------------------ edges as references */

/*
 * The nodes that refer to each node of a reference: for the local index j
 * of a node of dst_type, the global indices of the referring nodes are
 * src[ptr[j] .. ptr[j+1]), ascending (a stable parallel count and scatter).
 */
static gnn_status
invert_ref(const gnn_graph_ref *r, const typeinfo *ti, int T, int64_t **ptr_out, int32_t **src_out,
		   gnn_error *err)
{
	int64_t		sb = ti->type_ptr[r->src_type],
				ns = ti->type_ptr[r->src_type + 1] - sb,
				db = ti->type_ptr[r->dst_type],
				nd = ti->type_ptr[r->dst_type + 1] - db;
	int64_t    *ptr = gnn_malloc_big(sizeof(int64_t) * (nd + 1));
	int64_t    *off;
	int32_t    *src = NULL;
	int64_t		total = 0;

	if (T < 1 || ns < 65536)
		T = 1;
	off = calloc((size_t) T * (size_t) (nd ? nd : 1), sizeof(int64_t));
	if (!ptr || !off)
	{
		free(ptr);
		free(off);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory inverting %lld references", (long long) ns);
	}
	/*
	 * T chunks, each with its own counts; a team may have fewer threads than
	 * asked for (inside another parallel region, say), so each thread takes
	 * every nt-th chunk
	 */
#pragma omp parallel num_threads(T)
	{
#ifdef _OPENMP
		int			t0 = omp_get_thread_num(),
					nt = omp_get_num_threads();
#else
		int			t0 = 0,
					nt = 1;
#endif
		for (int t = t0; t < T; t += nt)
		{
			int64_t    *h = off + (size_t) t * nd;

			for (int64_t i = ns * t / T; i < ns * (t + 1) / T; i++)
				if (r->ref[i] >= 0)
					h[r->ref[i] - db]++;
		}
	}
	for (int64_t j = 0; j < nd; j++)
	{
		ptr[j] = total;
		for (int t = 0; t < T; t++)
		{
			int64_t		c = off[(size_t) t * nd + j];

			off[(size_t) t * nd + j] = total;
			total += c;
		}
	}
	ptr[nd] = total;
	src = gnn_malloc_big(sizeof(int32_t) * (total ? total : 1));
	if (!src)
	{
		free(ptr);
		free(off);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory inverting %lld references", (long long) total);
	}
#pragma omp parallel num_threads(T)
	{
#ifdef _OPENMP
		int			t0 = omp_get_thread_num(),
					nt = omp_get_num_threads();
#else
		int			t0 = 0,
					nt = 1;
#endif
		for (int t = t0; t < T; t += nt)
		{
			int64_t    *h = off + (size_t) t * nd;

			for (int64_t i = ns * t / T; i < ns * (t + 1) / T; i++)
				if (r->ref[i] >= 0)
					src[h[r->ref[i] - db]++] = (int32_t) (sb + i);
		}
	}
	free(off);
	*ptr_out = ptr;
	*src_out = src;
	return GNN_OK;
}

/*
 * The CSR of a graph given as references: a node's arcs are its own
 * references (one per reference of its type, unless -1) and the reverses of
 * the references to it (sorted lists from invert_ref), merged in
 * (neighbour, relation) order.  No two arcs coincide: every reference has
 * relations of its own, and a node refers once per reference.
 */
typedef struct refs_plan
{
	int32_t		K;
	int64_t   **iptr;			/* per reference: invert_ref's lists */
	int32_t   **isrc;
} refs_plan;

static void
refs_plan_free(refs_plan *rp)
{
	for (int32_t k = 0; k < rp->K && rp->iptr && rp->isrc; k++)
	{
		free(rp->iptr[k]);
		free(rp->isrc[k]);
	}
	free(rp->iptr);
	free(rp->isrc);
	memset(rp, 0, sizeof(*rp));
}

/*
 * First half of the CSR of references: check them, invert each, and count
 * every row (indptr, m and the relations' counts), so that the region can be
 * laid out before a single arc is written; refs_fill writes the arcs there.
 */
static gnn_status
refs_plan_make(const gnn_graph_input *in, typeinfo *ti, int64_t n, int T, refs_plan *rp, int64_t **indptr_out,
			   int64_t *m_out, gnn_error *err)
{
	int32_t		K = in->num_refs;
	gnn_status	status = GNN_OK;
	int64_t   **iptr = calloc(K ? K : 1, sizeof(int64_t *));
	int32_t   **isrc = calloc(K ? K : 1, sizeof(int32_t *));
	int64_t    *indptr = NULL;
	bool		used[GNN_MAX_EDGE_TYPES] = {false};
	int64_t		bad_i = -1;
	int32_t		bad_k = -1;

	if (!iptr || !isrc)
	{
		status = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int32_t k = 0; k < K; k++)
	{
		const gnn_graph_ref *r = &in->refs[k];
		int64_t		ns;

		if (r->src_type < 0 || r->src_type >= ti->nt || r->dst_type < 0 || r->dst_type >= ti->nt ||
			r->rel_fwd < 0 || r->rel_fwd >= ti->nr || r->rel_rev < 0 || r->rel_rev >= ti->nr ||
			r->rel_fwd == r->rel_rev || used[r->rel_fwd] || used[r->rel_rev])
		{
			status = gnn_error_set(err, GNN_ERR_INVALID,
								   "reference %d joins node types %d -> %d with relations %d and %d: "
								   "types must exist and each relation belong to one reference",
								   k, r->src_type, r->dst_type, r->rel_fwd, r->rel_rev);
			goto out;
		}
		used[r->rel_fwd] = used[r->rel_rev] = true;
		if (ti->nt > 1 &&
			(in->etype_src[r->rel_fwd] != r->src_type || in->etype_dst[r->rel_fwd] != r->dst_type ||
			 in->etype_src[r->rel_rev] != r->dst_type || in->etype_dst[r->rel_rev] != r->src_type))
		{
			status = gnn_error_set(err, GNN_ERR_INVALID,
								   "reference %d joins node types %d -> %d, but its relations %d and %d join other types",
								   k, r->src_type, r->dst_type, r->rel_fwd, r->rel_rev);
			goto out;
		}
		ns = ti->type_ptr[r->src_type + 1] - ti->type_ptr[r->src_type];
		if (ns > 0 && !r->ref)
		{
			status = gnn_error_set(err, GNN_ERR_INVALID, "reference %d has no values", k);
			goto out;
		}
		{
			int64_t		lo = ti->type_ptr[r->dst_type],
						hi = ti->type_ptr[r->dst_type + 1],
						first = INT64_MAX;

#pragma omp parallel for schedule(static) num_threads(T) reduction(min:first)
			for (int64_t i = 0; i < ns; i++)
			{
				int32_t		x = r->ref[i];

				if (x != -1 && (x < lo || x >= hi) && i < first)
					first = i;
			}
			if (first != INT64_MAX && bad_i < 0)
			{
				bad_i = first;
				bad_k = k;
			}
		}
	}
	if (bad_i >= 0)
	{
		const gnn_graph_ref *r = &in->refs[bad_k];
		int64_t		node = ti->type_ptr[r->src_type] + bad_i;

		status = row_error(err, node, node,
						   gnn_error_set(err, GNN_ERR_DANGLING,
										 "node %lld refers to %d through reference %d, which is not a node of type %d",
										 (long long) node, r->ref[bad_i], bad_k, r->dst_type));
		goto out;
	}
	for (int32_t k = 0; k < K; k++)
		if ((status = invert_ref(&in->refs[k], ti, T, &iptr[k], &isrc[k], err)) != GNN_OK)
			goto out;

	/* degrees, then the rows */
	indptr = gnn_malloc_big(sizeof(int64_t) * (n + 1));
	if (!indptr)
	{
		status = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto out;
	}
#pragma omp parallel for schedule(static) num_threads(T)
	for (int64_t v = 0; v < n; v++)
	{
		int32_t		t = ti->nt > 1 ? in->node_type[v] : 0;
		int64_t		j = v - ti->type_ptr[t],
					d = 0;

		for (int32_t k = 0; k < K; k++)
		{
			const gnn_graph_ref *r = &in->refs[k];

			if (r->src_type == t && r->ref[j] >= 0)
				d++;
			if (r->dst_type == t)
				d += iptr[k][j + 1] - iptr[k][j];
		}
		indptr[v + 1] = d;
	}
	indptr[0] = 0;
	for (int64_t v = 0; v < n; v++)
		indptr[v + 1] += indptr[v];
	for (int32_t k = 0; k < K; k++)
	{
		int64_t		c = iptr[k] ? iptr[k][ti->type_ptr[in->refs[k].dst_type + 1] - ti->type_ptr[in->refs[k].dst_type]] : 0;

		ti->rel_count[in->refs[k].rel_fwd] += c;
		ti->rel_count[in->refs[k].rel_rev] += c;
	}
	rp->K = K;
	rp->iptr = iptr;
	rp->isrc = isrc;
	iptr = NULL;
	isrc = NULL;
	*indptr_out = indptr;
	*m_out = indptr[n];
	indptr = NULL;
out:
	for (int32_t k = 0; k < K && iptr && isrc; k++)
	{
		free(iptr[k]);
		free(isrc[k]);
	}
	free(iptr);
	free(isrc);
	free(indptr);
	return status;
}

/* Second half: every row's arcs, merged, into indices (and rel, R > 1). */
static void
refs_fill(const gnn_graph_input *in, const typeinfo *ti, int64_t n, int T, const refs_plan *rp,
		  const int64_t *indptr, int32_t *indices, int16_t *rel)
{
	int32_t		K = rp->K;
	int64_t   **iptr = rp->iptr;
	int32_t   **isrc = rp->isrc;

#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
	for (int64_t v = 0; v < n; v++)
	{
		int32_t		t = ti->nt > 1 ? in->node_type[v] : 0;
		int64_t		j = v - ti->type_ptr[t],
					p = indptr[v];

		/* sorted runs: a reference's own arc (one item) or the referrers' list */
		const int32_t *run[2 * GNN_MAX_EDGE_TYPES];
		int64_t		len[2 * GNN_MAX_EDGE_TYPES];
		int16_t		rr[2 * GNN_MAX_EDGE_TYPES];
		int			nrun = 0;

		for (int32_t k = 0; k < K; k++)
		{
			const gnn_graph_ref *r = &in->refs[k];

			if (r->src_type == t && r->ref[j] >= 0)
			{
				run[nrun] = &r->ref[j];
				len[nrun] = 1;
				rr[nrun++] = (int16_t) r->rel_fwd;
			}
			if (r->dst_type == t && iptr[k][j + 1] > iptr[k][j])
			{
				run[nrun] = isrc[k] + iptr[k][j];
				len[nrun] = iptr[k][j + 1] - iptr[k][j];
				rr[nrun++] = (int16_t) r->rel_rev;
			}
		}
		if (nrun == 1)
		{
			memcpy(indices + p, run[0], sizeof(int32_t) * len[0]);
			if (rel)
				for (int64_t i = 0; i < len[0]; i++)
					rel[p + i] = rr[0];
			continue;
		}
		for (;;)
		{
			int			best = -1;

			for (int q = 0; q < nrun; q++)
				if (len[q] > 0 &&
					(best < 0 || run[q][0] < run[best][0] || (run[q][0] == run[best][0] && rr[q] < rr[best])))
					best = q;
			if (best < 0)
				break;
			indices[p] = run[best][0];
			if (rel)
				rel[p] = rr[best];
			p++;
			run[best]++;
			len[best]--;
		}
	}
}

/*
 * A sparse feature CSR over n node rows: ptr[0] = 0, ptr[n] = nnz, rows
 * within [0, nnz) and ascending, indices strictly ascending within a row and
 * within [0, dim) (dim > 0), values finite.  *maxidx: the largest index.
 */
static gnn_status
check_sparse_csr(const int64_t *ptr, const int32_t *idx, const float *val, int64_t n, int64_t nnz, int32_t dim,
				 int T, int32_t *maxidx_out, gnn_error *err)
{
	int64_t		bad = INT64_MAX;
	int32_t		maxidx = -1;

	if (ptr[0] != 0 || ptr[n] != nnz)
		return gnn_error_set(err, GNN_ERR_INVALID, "the sparse feature CSR spans %lld..%lld of %lld entries",
							 (long long) ptr[0], (long long) ptr[n], (long long) nnz);
#pragma omp parallel for schedule(static) num_threads(T) reduction(min:bad) reduction(max:maxidx)
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		b = ptr[v],
					e = ptr[v + 1];

		/* b < 0 too: rows are checked in parallel, not after their predecessors */
		if (b < 0 || e < b || e > nnz)
		{
			if (v < bad)
				bad = v;
			continue;
		}
		for (int64_t i = b; i < e; i++)
		{
			int32_t		x = idx[i];

			if (x < 0 || (dim > 0 && x >= dim) || (i > b && x <= idx[i - 1]) || !isfinite(val[i]))
			{
				if (v < bad)
					bad = v;
				break;
			}
			if (x > maxidx)
				maxidx = x;
		}
	}
	*maxidx_out = maxidx;
	if (bad != INT64_MAX)
	{
		gnn_status	st = gnn_error_set(err, GNN_ERR_BAD_VALUE,
									   "the sparse features of node %lld are out of order, out of range or not finite",
									   (long long) bad);

		if (err)
		{
			err->row = bad;
			err->id = bad;
		}
		return st;
	}
	return GNN_OK;
}

gnn_status
gnn_graph_build_into(const gnn_graph_input *in, gnn_region_alloc_fn alloc, void *alloc_arg,
					 void **region_out, uint64_t *size_out, gnn_error *err)
{
	gnn_status	status = GNN_OK;
	idmap		map;
	int64_t    *ids = NULL;
	int64_t		n = 0;
	int64_t    *rowpos = NULL;	/* node-table row of each internal index */
	typeinfo	ti;
	int16_t    *erel = NULL,	/* relation per edge (R > 1), then per arc */
			   *r1 = NULL;
	int32_t    *arows = NULL;	/* edge rows per arc (keep_arc_rows) */
	int32_t    *esrc = NULL,
			   *edst = NULL,
			   *s1 = NULL,
			   *d1 = NULL,
			   *indices = NULL,
			   *sp_row = NULL,
			   *fidx = NULL;
	float	   *ew = NULL,
			   *w1 = NULL,
			   *weights = NULL,
			   *fval = NULL;
	int64_t    *indptr = NULL,
			   *fptr = NULL;
	int64_t		m2 = 0,
				m = 0,
				feat_nnz = 0;
	int32_t		feat_dim = 0,
				feat_kind = GNN_FEAT_NONE,
				num_classes = 0;
	int64_t		n_train = 0,
				n_val = 0,
				n_test = 0,
				n_labelled = 0;
	char	   *region = NULL;
	int			T = nthreads_of(in);
	refs_plan	rplan;
	bool		typed_arcs;		/* arc_type / rarc_type in the region */

	memset(&map, 0, sizeof(map));
	memset(&rplan, 0, sizeof(rplan));
	*region_out = NULL;
	*size_out = 0;
	if (err)
		gnn_error_clear(err);
	if (in->num_edges < 0 || in->num_nodes < 0 || (in->num_edges > 0 && (!(in->src || in->src32) || !(in->dst || in->dst32))) ||
		(in->src && in->src32) || (in->dst && in->dst32))
		FAIL(GNN_ERR_INVALID, "invalid graph input");
	if (in->feat_dim < 0 || (in->feat_dim > 0 && !in->feat && !in->feat_fill) || (in->feat && in->feat_fill))
		FAIL(GNN_ERR_INVALID, "invalid feature input");
	if (in->feat_dim > 0 && in->sparse_nnz > 0)
		FAIL(GNN_ERR_INVALID, "both dense and sparse features were given");
	if (in->num_refs < 0 || (in->num_refs > 0 && (!in->refs || in->num_edges > 0)))
		FAIL(GNN_ERR_INVALID, "edges must be given either as src / dst or as references, not both");
	if ((in->feat_dim > 0 || in->labels || in->split || in->node_time || in->seed_time || in->targets ||
		 in->node_part) && !in->node_ids)
		FAIL(GNN_ERR_INVALID, "node data was given without node ids");
	if (in->node_part)
	{
		if (in->part < 0)
			FAIL(GNN_ERR_INVALID, "a partitioned graph needs its own part (%d)", in->part);
		for (int64_t r = 0; r < in->num_nodes; r++)
			if (in->node_part[r] < -1)
			{
				if (err)
				{
					err->row = r;
					err->id = in->node_ids[r];
				}
				FAIL(GNN_ERR_BAD_VALUE, "node %lld has part %d; parts are 0 or more",
					 (long long) in->node_ids[r], in->node_part[r]);
			}
	}
	if ((status = check_types(in, &ti, err)) != GNN_OK ||
		(ti.indexed && (status = check_keys(in, &ti, err)) != GNN_OK) ||
		((in->node_time || in->seed_time || in->targets) &&
		 (status = check_node_values(in, in->num_nodes, &ti, err)) != GNN_OK))
		goto done;

	/* 1. the node set, sorted and unique */
	if (in->node_ids)
	{
		n = in->num_nodes;
		ids = gnn_malloc_big(sizeof(int64_t) * (n ? n : 1));
		if (!ids)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld node ids", (long long) n);
		memcpy(ids, in->node_ids, sizeof(int64_t) * n);
		bool		sorted = true;

		for (int64_t i = 1; i < n && sorted; i++)
			sorted = in->node_ids[i - 1] < in->node_ids[i];
		if (!sorted && (status = radix_sort_i64(ids, n, err)) != GNN_OK)
			goto done;
		for (int64_t i = 1; i < n; i++)
			if (ids[i] == ids[i - 1])
			{
				int64_t		first = -1,
							second = -1;

				for (int64_t r = 0; r < n; r++)
					if (in->node_ids[r] == ids[i])
					{
						if (first < 0)
							first = r;
						else
						{
							second = r;
							break;
						}
					}
				if (err)
				{
					err->id = ids[i];
					err->row = second;
				}
				FAIL(GNN_ERR_DUPLICATE, "node id %lld appears more than once (rows %lld and %lld)",
					 (long long) ids[i], (long long) first + 1, (long long) second + 1);
			}
		/* rows already in id order (serial keys): the permutation is the identity */
		if (!sorted && (in->feat_dim > 0 || in->labels || in->split || in->node_time || in->seed_time || in->targets ||
						in->node_part))
		{
			if ((status = idmap_init(&map, ids, n, err)) != GNN_OK)
				goto done;
			rowpos = gnn_malloc_big(sizeof(int64_t) * (n ? n : 1));
			if (!rowpos)
				FAIL(GNN_ERR_NOMEM, "out of memory");
			for (int64_t r = 0; r < n; r++)
				rowpos[idmap_find(&map, in->node_ids[r])] = r;
		}
	}
	else if ((status = endpoint_ids(in, &ids, &n, err)) != GNN_OK)
		goto done;
	/* nodes without edges make a graph (every node isolated); no nodes do not */
	if (n == 0)
		FAIL(GNN_ERR_EMPTY, "the graph has no nodes (no node rows and no edges)");
	if (n > INT32_MAX)
		FAIL(GNN_ERR_LIMIT, "graph has %lld nodes; at most %d are supported", (long long) n, INT32_MAX);
	if (!map.n && n > 0 && (status = idmap_init(&map, ids, n, err)) != GNN_OK)
		goto done;
	if (!ti.indexed)
		ti.type_ptr[1] = n;

	/* edges given as references: the CSR directly, no sort, no merge */
	if (in->num_refs > 0)
	{
		if ((status = refs_plan_make(in, &ti, n, T, &rplan, &indptr, &m, err)) != GNN_OK)
			goto done;
		goto node_data;
	}
	/* 2. map edge endpoints; symmetrise */
	{
		int64_t		me = in->num_edges;
		int64_t		cap = in->undirected ? 2 * me : me;
		int64_t		bad = -1;

		esrc = gnn_malloc_big(sizeof(int32_t) * (cap ? cap : 1));
		edst = gnn_malloc_big(sizeof(int32_t) * (cap ? cap : 1));
		if (in->weight)
			ew = gnn_malloc_big(sizeof(float) * (cap ? cap : 1));
		if (ti.nr > 1)
			erel = gnn_malloc_big(sizeof(int16_t) * (cap ? cap : 1));
		if (!esrc || !edst || (in->weight && !ew) || (ti.nr > 1 && !erel))
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld edges", (long long) cap);
		if (ti.typed)
		{
			if ((status = map_typed_edges(in, n, &ti, esrc, edst, ew, erel, &m2, err)) != GNN_OK)
				goto done;
			goto mapped;
		}

#pragma omp parallel for schedule(static) num_threads(T)
		for (int64_t e = 0; e < me; e++)
		{
			esrc[e] = (int32_t) idmap_find(&map, in_src(in, e));
			edst[e] = (int32_t) idmap_find(&map, in_dst(in, e));
		}
		/* compact away dangling edges (or report the first one) */
		int64_t		k = 0;

		for (int64_t e = 0; e < me; e++)
		{
			if (esrc[e] < 0 || edst[e] < 0)
			{
				if (!in->skip_dangling)
				{
					bad = e;
					break;
				}
				continue;
			}
			if (in->weight)
			{
				float		wv = in->weight[e];

				if (!isfinite(wv))
				{
					if (err)
					{
						err->row = e;
						err->id = in_src(in, e);
					}
					FAIL(GNN_ERR_BAD_VALUE, "edge %lld -> %lld has weight %g",
						 (long long) in_src(in, e), (long long) in_dst(in, e), (double) wv);
				}
				ew[k] = wv;
			}
			esrc[k] = esrc[e];
			edst[k] = edst[e];
			k++;
		}
		if (bad >= 0)
		{
			int64_t		which = esrc[bad] < 0 ? in_src(in, bad) : in_dst(in, bad);

			if (err)
			{
				err->row = bad;
				err->id = which;
			}
			FAIL(GNN_ERR_DANGLING, "edge %lld -> %lld refers to node %lld, which is not in the node set",
				 (long long) in_src(in, bad), (long long) in_dst(in, bad), (long long) which);
		}
		if (in->undirected)
		{
			memcpy(esrc + k, edst, sizeof(int32_t) * k);
			memcpy(edst + k, esrc, sizeof(int32_t) * k);
			if (ew)
				memcpy(ew + k, ew, sizeof(float) * k);
			m2 = 2 * k;
		}
		else
			m2 = k;
	}
mapped:

	/* 3. sort by (source, destination): by destination, then stably by source */
	s1 = gnn_malloc_big(sizeof(int32_t) * (m2 ? m2 : 1));
	d1 = gnn_malloc_big(sizeof(int32_t) * (m2 ? m2 : 1));
	if (ew)
		w1 = gnn_malloc_big(sizeof(float) * (m2 ? m2 : 1));
	if (erel)
		r1 = gnn_malloc_big(sizeof(int16_t) * (m2 ? m2 : 1));
	if (!s1 || !d1 || (ew && !w1) || (erel && !r1))
		FAIL(GNN_ERR_NOMEM, "out of memory sorting %lld edges", (long long) m2);
	if ((status = gnn_graph_counting_sort(m2, n, edst, esrc, ew, erel, d1, s1, w1, r1, NULL, T, err)) != GNN_OK)
		goto done;
	/* reuse the first buffers for the rows: esrc becomes the neighbour array */
	indices = esrc;
	esrc = NULL;
	weights = ew;
	ew = NULL;
	indptr = gnn_malloc_big(sizeof(int64_t) * (n + 1));
	if (!indptr)
		FAIL(GNN_ERR_NOMEM, "out of memory");
	/* erel, read by the first sort, takes each arc's relation from the second */
	if ((status = gnn_graph_counting_sort(m2, n, s1, d1, w1, r1, NULL, indices, weights, erel, indptr, T,
								err)) != GNN_OK)
		goto done;
	free(s1);
	free(d1);
	free(w1);
	free(r1);
	free(edst);
	s1 = d1 = edst = NULL;
	w1 = NULL;
	r1 = NULL;

	/*
	 * 4. merge duplicates within each row (rows are sorted by neighbour, then
	 * relation: only arcs of the same relation merge), then compact.  With
	 * keep_arc_rows each arc counts the entries merged into it: one per edge
	 * row, two for an undirected self-loop (its row is both of its arcs, so
	 * its weight doubles and a row removed later takes both).
	 */
	{
		int64_t    *len = gnn_malloc_big(sizeof(int64_t) * (n ? n : 1));

		if (!len)
			FAIL(GNN_ERR_NOMEM, "out of memory");
		if (in->keep_arc_rows)
		{
			arows = gnn_malloc_big(sizeof(int32_t) * (m2 ? m2 : 1));
			if (!arows)
			{
				free(len);
				FAIL(GNN_ERR_NOMEM, "out of memory");
			}
		}
#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
		for (int64_t v = 0; v < n; v++)
		{
			int64_t		b = indptr[v],
						e = indptr[v + 1],
						k = 0;
			int32_t    *ri = indices + b;
			float	   *rw = weights ? weights + b : NULL;
			int16_t    *rt = erel ? erel + b : NULL;
			int32_t    *ra = arows ? arows + b : NULL;

			for (int64_t i = 0; i < e - b; i++)
			{
				if (k > 0 && ri[k - 1] == ri[i] && (!rt || rt[k - 1] == rt[i]))
				{
					if (rw)
						rw[k - 1] += rw[i];
					if (ra)
						ra[k - 1]++;
					continue;
				}
				ri[k] = ri[i];
				if (rw)
					rw[k] = rw[i];
				if (rt)
					rt[k] = rt[i];
				if (ra)
					ra[k] = 1;
				k++;
			}
			len[v] = k;
		}
		int64_t		out = 0;

		for (int64_t v = 0; v < n; v++)
		{
			int64_t		b = indptr[v];

			if (out != b)
			{
				memmove(indices + out, indices + b, sizeof(int32_t) * len[v]);
				if (weights)
					memmove(weights + out, weights + b, sizeof(float) * len[v]);
				if (erel)
					memmove(erel + out, erel + b, sizeof(int16_t) * len[v]);
				if (arows)
					memmove(arows + out, arows + b, sizeof(int32_t) * len[v]);
			}
			indptr[v] = out;
			out += len[v];
		}
		indptr[n] = out;
		m = out;
		free(len);
		if (erel)
			for (int64_t p = 0; p < m; p++)
				ti.rel_count[erel[p]]++;
		else
			ti.rel_count[0] = m;
	}

node_data:
	/* 5. node data: validate now, write later */
	if (in->feat_dim > 0)
	{
		feat_kind = GNN_FEAT_DENSE;
		feat_dim = in->feat_dim;
		int64_t		bad = -1;

		/* (written and checked by the caller's feat_fill later) */
#pragma omp parallel for schedule(static) num_threads(T)
		for (int64_t r = 0; r < (in->feat_fill ? 0 : n * (int64_t) feat_dim); r++)
			if (!isfinite(in->feat[r]))
			{
#pragma omp critical
				if (bad < 0 || r < bad)
					bad = r;
			}
		if (bad >= 0)
		{
			int64_t		row = bad / feat_dim;

			if (err)
			{
				err->row = row;
				err->id = in->node_ids[row];
			}
			FAIL(GNN_ERR_BAD_VALUE, "feature %lld of node %lld is %g",
				 (long long) (bad % feat_dim), (long long) in->node_ids[row], (double) in->feat[bad]);
		}
	}
	else if (in->sparse_nnz > 0 && in->sp_fill)
	{
		/* written into the region by the caller, and checked there (below) */
		if (!ti.indexed)
			FAIL(GNN_ERR_INVALID, "sparse features as a CSR need node rows with ids 0..n-1");
		if (in->sp_ptr || in->sp_node || in->sp_index || in->sp_value || in->sparse_dim <= 0)
			FAIL(GNN_ERR_INVALID, "sparse features written into the region come without arrays, with their width");
		feat_dim = in->sparse_dim;
		feat_kind = GNN_FEAT_SPARSE;
		feat_nnz = in->sparse_nnz;
	}
	else if (in->sparse_nnz > 0 && in->sp_ptr)
	{
		/* a CSR already: check it, and copy it as it is */
		int32_t		maxidx = -1;

		if (!ti.indexed)
			FAIL(GNN_ERR_INVALID, "sparse features as a CSR need node rows with ids 0..n-1");
		if ((status = check_sparse_csr(in->sp_ptr, in->sp_index, in->sp_value, n, in->sparse_nnz, in->sparse_dim,
									   T, &maxidx, err)) != GNN_OK)
			goto done;
		fptr = gnn_malloc_big(sizeof(int64_t) * (n + 1));
		if (!fptr)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld sparse features", (long long) in->sparse_nnz);
		memcpy(fptr, in->sp_ptr, sizeof(int64_t) * (n + 1));
		feat_dim = in->sparse_dim > 0 ? in->sparse_dim : maxidx + 1;
		feat_kind = GNN_FEAT_SPARSE;
		feat_nnz = in->sparse_nnz;
	}
	else if (in->sparse_nnz > 0)
	{
		int64_t		nnz = in->sparse_nnz;
		int32_t		dim = in->sparse_dim;
		int32_t		maxidx = -1;

		sp_row = gnn_malloc_big(sizeof(int32_t) * nnz);
		fidx = gnn_malloc_big(sizeof(int32_t) * nnz);
		fval = gnn_malloc_big(sizeof(float) * nnz);
		fptr = gnn_malloc_big(sizeof(int64_t) * (n + 1));
		if (!sp_row || !fidx || !fval || !fptr)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld sparse features", (long long) nnz);
		for (int64_t i = 0; i < nnz; i++)
		{
			int64_t		v = idmap_find(&map, in->sp_node[i]);
			const char *why = NULL;

			if (v < 0)
				why = "is not a node of the graph";
			else if (in->sp_index[i] < 0 || (dim > 0 && in->sp_index[i] >= dim))
				why = "has a feature index out of range";
			else if (!isfinite(in->sp_value[i]))
				why = "has a NaN or infinite value";
			if (why)
			{
				if (err)
				{
					err->row = i;
					err->id = in->sp_node[i];
				}
				FAIL(v < 0 ? GNN_ERR_DANGLING : GNN_ERR_BAD_VALUE,
					 "sparse feature (%lld, %d, %g) %s",
					 (long long) in->sp_node[i], in->sp_index[i], (double) in->sp_value[i], why);
			}
			sp_row[i] = (int32_t) v;
			if (in->sp_index[i] > maxidx)
				maxidx = in->sp_index[i];
		}
		feat_dim = dim > 0 ? dim : maxidx + 1;
		feat_kind = GNN_FEAT_SPARSE;
		/*
		 * rows by node; within a row, by index: sort by index, then stably by
		 * row, unless the triples come in that order already (a schema load
		 * writes them so): then one counting pass and two copies.
		 */
		bool		presorted = true;

		for (int64_t i = 1; i < nnz && presorted; i++)
			presorted = sp_row[i - 1] < sp_row[i] ||
				(sp_row[i - 1] == sp_row[i] && in->sp_index[i - 1] < in->sp_index[i]);
		if (presorted)
		{
			memset(fptr, 0, sizeof(int64_t) * (n + 1));
			for (int64_t i = 0; i < nnz; i++)
				fptr[sp_row[i] + 1]++;
			for (int64_t v = 0; v < n; v++)
				fptr[v + 1] += fptr[v];
			memcpy(fidx, in->sp_index, sizeof(int32_t) * nnz);
			memcpy(fval, in->sp_value, sizeof(float) * nnz);
		}
		else
		{
			int32_t    *ti = gnn_malloc_big(sizeof(int32_t) * nnz);
			int32_t    *tr = gnn_malloc_big(sizeof(int32_t) * nnz);
			float	   *tv = gnn_malloc_big(sizeof(float) * nnz);

			if (!ti || !tr || !tv)
			{
				free(ti);
				free(tr);
				free(tv);
				FAIL(GNN_ERR_NOMEM, "out of memory for %lld sparse features", (long long) nnz);
			}
			status = gnn_graph_counting_sort(nnz, feat_dim, in->sp_index, sp_row, in->sp_value, NULL, ti, tr, tv, NULL,
								   NULL, T, err);
			if (status == GNN_OK)
				status = gnn_graph_counting_sort(nnz, n, tr, ti, tv, NULL, NULL, fidx, fval, NULL, fptr, T, err);
			free(ti);
			free(tr);
			free(tv);
			if (status != GNN_OK)
				goto done;
		}
		/* merge duplicate (node, index) entries: values summed */
		int64_t		out = 0;

		for (int64_t v = 0; v < n; v++)
		{
			int64_t		b = fptr[v],
						e = fptr[v + 1];

			fptr[v] = out;
			for (int64_t i = b; i < e; i++)
			{
				if (out > fptr[v] && fidx[out - 1] == fidx[i])
				{
					fval[out - 1] += fval[i];
					continue;
				}
				fidx[out] = fidx[i];
				fval[out] = fval[i];
				out++;
			}
		}
		fptr[n] = out;
		feat_nnz = out;
	}
	if (in->labels)
	{
		int32_t		maxl = -1;

		for (int64_t r = 0; r < n; r++)
		{
			int32_t		l = in->labels[r];

			if (l >= 0)
				n_labelled++;
			if (l > maxl)
				maxl = l;
		}
		num_classes = maxl + 1;
	}
	if (in->split)
		for (int64_t r = 0; r < n; r++)
		{
			n_train += in->split[r] == GNN_SPLIT_TRAIN;
			n_val += in->split[r] == GNN_SPLIT_VAL;
			n_test += in->split[r] == GNN_SPLIT_TEST;
		}

	/* 6. the exact size is known: take the region */
	{
		uint64_t	sz[L_COUNT] = {0};
		bool		present[L_COUNT] = {false};
		layout		l;
		uint64_t	un = (uint64_t) n,
					um = (uint64_t) m;

		sz[L_IDS] = 8 * un;
		sz[L_INDPTR] = 8 * (un + 1);
		sz[L_INDICES] = 4 * um;
		sz[L_WEIGHTS] = weights ? 4 * um : 0;
		/* of references, the reverse CSR's neighbours are the CSR's: shared */
		sz[L_RINDPTR] = in->num_refs > 0 ? 0 : 8 * (un + 1);
		sz[L_RINDICES] = in->num_refs > 0 ? 0 : 4 * um;
		sz[L_RWEIGHTS] = weights ? 4 * um : 0;
		sz[L_FEAT] = feat_kind == GNN_FEAT_DENSE ? 4 * un * (uint64_t) feat_dim : 0;
		sz[L_FPTR] = feat_kind == GNN_FEAT_SPARSE ? 8 * (un + 1) : 0;
		sz[L_FIDX] = 4 * (uint64_t) feat_nnz;
		sz[L_FVAL] = 4 * (uint64_t) feat_nnz;
		sz[L_LABELS] = in->labels ? 4 * un : 0;
		sz[L_SPLIT] = in->split ? un : 0;
		sz[L_CLASSES] = in->class_names ? in->class_names_bytes : 0;
		sz[L_TYPE_PTR] = 8 * ((uint64_t) ti.nt + 1);
		sz[L_NODE_TYPE] = ti.nt > 1 ? 2 * un : 0;
		sz[L_ETYPES] = sizeof(gnn_edge_type) * (uint64_t) ti.nr;
		typed_arcs = erel != NULL || (in->num_refs > 0 && ti.nr > 1);
		sz[L_ARC_TYPE] = sz[L_RARC_TYPE] = typed_arcs ? 2 * um : 0;
		sz[L_TYPE_NAMES] = ti.names_bytes;
		sz[L_KEYS] = in->keys ? 8 * un : 0;
		sz[L_KEY_OFF] = in->key_off ? 8 * (un + 1) : 0;
		sz[L_KEY_BYTES] = in->key_off ? (uint64_t) in->key_off[n] : 0;
		sz[L_TYPE_TEXT_KEY] = in->key_off ? (uint64_t) ti.nt : 0;
		sz[L_TIME] = ti.has_time || ti.has_seed_time ? 8 * un : 0;
		sz[L_SEED_TIME] = ti.has_seed_time ? 8 * un : 0;
		sz[L_TARGETS] = ti.has_targets ? 4 * un : 0;
		sz[L_META] = in->meta ? in->meta_bytes : 0;
		/* (edges as references: every arc is one reference; no counts kept) */
		sz[L_ARC_ROWS] = arows ? 4 * um : 0;
		present[L_ARC_ROWS] = arows != NULL;
		sz[L_PART] = in->node_part ? 4 * un : 0;
		present[L_PART] = in->node_part != NULL;
		present[L_IDS] = present[L_INDPTR] = present[L_INDICES] = true;
		present[L_TYPE_PTR] = present[L_ETYPES] = true;
		present[L_ARC_TYPE] = present[L_RARC_TYPE] = typed_arcs;
		present[L_KEY_OFF] = present[L_KEY_BYTES] = present[L_TYPE_TEXT_KEY] = in->key_off != NULL;
		present[L_RINDPTR] = present[L_RINDICES] = in->num_refs == 0;
		present[L_FPTR] = present[L_FIDX] = present[L_FVAL] = feat_kind == GNN_FEAT_SPARSE;
		gnn_graph_compute_layout(sz, present, &l);

		region = alloc(alloc_arg, l.total);
		if (!region)
			FAIL(GNN_ERR_LIMIT, "a region of %llu bytes was refused", (unsigned long long) l.total);

		gnn_graph_header *h = (gnn_graph_header *) region;

		gnn_graph_header_from_layout(h, &l, sz);
		h->num_nodes = n;
		h->num_edges = m;
		h->feat_nnz = feat_nnz;
		h->n_train = n_train;
		h->n_val = n_val;
		h->n_test = n_test;
		h->n_labelled = n_labelled;
		h->feat_kind = feat_kind;
		h->feat_dim = feat_dim;
		h->num_classes = num_classes;
		h->weighted = weights != NULL;
		/* of references, the reverse CSR's neighbours are the CSR's own arrays */
		if (in->num_refs > 0)
		{
			h->off_rindptr = l.off[L_INDPTR];
			h->off_rindices = l.off[L_INDICES];
		}
		h->num_node_types = ti.nt;
		h->num_edge_types = ti.nr;
		if (in->node_part)
		{
			h->part = in->part;
			for (int64_t r = 0; r < n; r++)
				h->n_owned += in->node_part[r] == in->part;
		}

		memcpy(region + h->off_ids, ids, 8 * un);
		memcpy(region + h->off_indptr, indptr, 8 * (un + 1));
		if (in->num_refs > 0)
		{
			/* the arcs of references go straight into the region */
			refs_fill(in, &ti, n, T, &rplan, indptr, (int32_t *) (region + h->off_indices),
					  typed_arcs ? (int16_t *) (region + h->off_arc_type) : NULL);
			refs_plan_free(&rplan);
		}
		else
			memcpy(region + h->off_indices, indices, 4 * um);
		if (weights)
			memcpy(region + h->off_weights, weights, 4 * um);
		if (arows)
			memcpy(region + h->off_arc_rows, arows, 4 * um);

		/*
		 * the reverse CSR: the transpose of the merged CSR, rows in (source,
		 * relation) order.  Of references it is the CSR itself (the same
		 * arrays in the region) with every relation swapped for its pair (an arc v -> u of relation r is an
		 * arc u -> v of r's pair), reordered where one neighbour has arcs of
		 * several relations; else a stable parallel count and scatter of the
		 * arcs by destination.
		 */
		int64_t    *rptr = (int64_t *) (region + h->off_rindptr);
		int32_t    *ridx = (int32_t *) (region + h->off_rindices);
		float	   *rw = weights ? (float *) (region + h->off_rweights) : NULL;
		int16_t    *rat = typed_arcs ? (int16_t *) (region + h->off_rarc_type) : NULL;
		const int16_t *arcs = in->num_refs > 0 && typed_arcs ? (int16_t *) (region + h->off_arc_type) : erel;

		if (in->num_refs > 0)
		{
			int16_t		pair[GNN_MAX_EDGE_TYPES];

			for (int32_t r = 0; r < ti.nr; r++)
				pair[r] = (int16_t) r;
			for (int32_t k = 0; k < in->num_refs; k++)
			{
				pair[in->refs[k].rel_fwd] = (int16_t) in->refs[k].rel_rev;
				pair[in->refs[k].rel_rev] = (int16_t) in->refs[k].rel_fwd;
			}
			/* rptr and ridx are the CSR's own arrays (written above) */
			if (rat)
			{
#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
				for (int64_t v = 0; v < n; v++)
				{
					int64_t		b = indptr[v],
								e = indptr[v + 1];

					for (int64_t p = b; p < e; p++)
					{
						int16_t		x = pair[arcs[p]];
						int64_t		q = p;

						/* insertion within a run of one neighbour */
						while (q > b && ridx[q - 1] == ridx[p] && rat[q - 1] > x)
						{
							rat[q] = rat[q - 1];
							q--;
						}
						rat[q] = x;
					}
				}
			}
		}
		else
		{
			int32_t    *asrc = gnn_malloc_big(sizeof(int32_t) * (um ? um : 1));

			if (!asrc)
				FAIL(GNN_ERR_NOMEM, "out of memory for the reverse of %lld arcs", (long long) m);
#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
			for (int64_t v = 0; v < n; v++)
				for (int64_t p = indptr[v]; p < indptr[v + 1]; p++)
					asrc[p] = (int32_t) v;
			status = gnn_graph_counting_sort(m, n, indices, asrc, weights, erel, NULL, ridx, rw, rat, rptr, T, err);
			free(asrc);
			if (status != GNN_OK)
				goto done;
		}
		if (feat_kind == GNN_FEAT_DENSE)
		{
			float	   *f = (float *) (region + h->off_feat);
			size_t		row = sizeof(float) * (size_t) feat_dim;

			if (in->feat_fill)
			{
				/* node_of_row inverts rowpos (node -> input row) */
				int64_t    *node_of_row = gnn_malloc_big(sizeof(int64_t) * (un ? un : 1));

				if (!node_of_row)
					FAIL(GNN_ERR_NOMEM, "out of memory");
				for (int64_t v = 0; v < n; v++)
					node_of_row[rowpos ? rowpos[v] : v] = v;
				status = in->feat_fill(in->feat_fill_arg, f, node_of_row, err);
				free(node_of_row);
				if (status != GNN_OK)
					goto done;
			}
			else if (!rowpos)
				memcpy(f, in->feat, row * un);
			else
			{
#pragma omp parallel for schedule(static) num_threads(T)
				for (int64_t v = 0; v < n; v++)
					memcpy(f + v * feat_dim, in->feat + rowpos[v] * feat_dim, row);
			}
		}
		else if (feat_kind == GNN_FEAT_SPARSE && in->sp_fill)
		{
			int64_t    *rp = (int64_t *) (region + h->off_fptr);
			int32_t    *ri = (int32_t *) (region + h->off_fidx),
						maxidx;
			float	   *rv = (float *) (region + h->off_fval);

			if ((status = in->sp_fill(in->sp_fill_arg, rp, ri, rv, feat_nnz, err)) != GNN_OK ||
				(status = check_sparse_csr(rp, ri, rv, n, feat_nnz, feat_dim, T, &maxidx, err)) != GNN_OK)
				goto done;
		}
		else if (feat_kind == GNN_FEAT_SPARSE)
		{
			memcpy(region + h->off_fptr, fptr, 8 * (un + 1));
			memcpy(region + h->off_fidx, fidx ? fidx : in->sp_index, 4 * (uint64_t) feat_nnz);
			memcpy(region + h->off_fval, fval ? fval : in->sp_value, 4 * (uint64_t) feat_nnz);
		}
		if (in->labels)
		{
			int32_t    *lab = (int32_t *) (region + h->off_labels);

			for (int64_t v = 0; v < n; v++)
			{
				int32_t		x = in->labels[rowpos ? rowpos[v] : v];

				lab[v] = x < 0 ? -1 : x;
			}
		}
		if (in->split)
		{
			uint8_t    *sp = (uint8_t *) (region + h->off_split);

			for (int64_t v = 0; v < n; v++)
			{
				uint8_t		x = in->split[rowpos ? rowpos[v] : v];

				sp[v] = x <= GNN_SPLIT_TEST ? x : GNN_SPLIT_NONE;
			}
		}
		if (sz[L_CLASSES])
			memcpy(region + h->off_class_names, in->class_names, sz[L_CLASSES]);
		write_types(in, &ti, n, m, erel, rowpos, region, h);
		h->checksum = gnn_graph_header_checksum(h);
		*region_out = region;
		*size_out = l.total;
	}

done:
	free(ids);
	free(rowpos);
	free(esrc);
	free(edst);
	free(ew);
	free(erel);
	free(arows);
	refs_plan_free(&rplan);
	free(r1);
	free(s1);
	free(d1);
	free(w1);
	free(indices);
	free(weights);
	free(indptr);
	free(sp_row);
	free(fptr);
	free(fidx);
	free(fval);
	idmap_free(&map);
	return status;
}

/* ------------------------------------------------------------------ attach */

/*
 * count elements of elem bytes at off lie inside the region and are aligned.
 * Counts are checked by division: a count times its element size can
 * overflow (a header claiming 2^61 nodes "needs" 0 bytes of ids).
 */
static bool
span_ok(uint64_t off, uint64_t count, uint64_t elem, uint64_t size)
{
	return off >= sizeof(gnn_graph_header) && off <= size && off % elem == 0 &&
		count <= (size - off) / elem;
}

/*
 * The version 2 arrays: in the region, present as the counts of types say,
 * and small enough to check in full where a lookup would walk them (type
 * pointers, relations' endpoint types, the names' last NUL, the text key
 * bytes' end).
 */
static bool
types_ok(const gnn_graph_header *h, uint64_t size)
{
	const char *base = (const char *) h;
	uint64_t	n = h->num_nodes,
				m = h->num_edges,
				nt = (uint64_t) h->num_node_types,
				nr = (uint64_t) h->num_edge_types;

	if (h->num_node_types < 1 || h->num_node_types > GNN_MAX_NODE_TYPES ||
		h->num_edge_types < 1 || h->num_edge_types > GNN_MAX_EDGE_TYPES ||
		!span_ok(h->off_type_ptr, nt + 1, 8, size) ||
		!span_ok(h->off_etypes, nr, sizeof(gnn_edge_type), size) ||
		(nt > 1) != (h->off_node_type != 0) ||
		(h->off_node_type && !span_ok(h->off_node_type, n, 2, size)) ||
		(nr > 1) != (h->off_arc_type != 0) || (nr > 1) != (h->off_rarc_type != 0) ||
		(h->off_arc_type && !span_ok(h->off_arc_type, m, 2, size)) ||
		(h->off_rarc_type && !span_ok(h->off_rarc_type, m, 2, size)) ||
		(h->off_type_names && !span_ok(h->off_type_names, h->type_names_bytes, 1, size)) ||
		(h->off_keys && !span_ok(h->off_keys, n, 8, size)) ||
		(h->off_key_off && (!span_ok(h->off_key_off, n + 1, 8, size) ||
							!span_ok(h->off_key_bytes, h->key_bytes, 1, size) ||
							!span_ok(h->off_type_text_key, nt, 1, size))) ||
		(h->off_time && !span_ok(h->off_time, n, 8, size)) ||
		(h->off_seed_time && !span_ok(h->off_seed_time, n, 8, size)) ||
		(h->off_targets && !span_ok(h->off_targets, n, 4, size)) ||
		(h->off_meta && !span_ok(h->off_meta, h->meta_bytes, 1, size)))
		return false;

	const int64_t *tp = (const int64_t *) (base + h->off_type_ptr);
	const gnn_edge_type *et = (const gnn_edge_type *) (base + h->off_etypes);

	if (tp[0] != 0 || tp[nt] != h->num_nodes)
		return false;
	for (uint64_t t = 0; t < nt; t++)
		if (tp[t + 1] < tp[t])
			return false;
	for (uint64_t r = 0; r < nr; r++)
		if (et[r].src_type < 0 || et[r].src_type >= h->num_node_types ||
			et[r].dst_type < 0 || et[r].dst_type >= h->num_node_types)
			return false;
	if (h->off_type_names && (h->type_names_bytes == 0 || base[h->off_type_names + h->type_names_bytes - 1] != '\0'))
		return false;
	if (h->off_key_off)
	{
		const int64_t *ko = (const int64_t *) (base + h->off_key_off);

		if (ko[0] != 0 || (uint64_t) ko[n] != h->key_bytes)
			return false;
	}
	return true;
}

gnn_status
gnn_graph_attach(const void *region, uint64_t size, gnn_graph *g, gnn_error *err)
{
	const gnn_graph_header *h = region;
	const char *base = region;

	memset(g, 0, sizeof(*g));
	if (!region || size < sizeof(gnn_graph_header))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region is missing or too small");
	if (h->magic != GNN_GRAPH_MAGIC || h->version != GNN_GRAPH_VERSION)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region has a bad magic number or version");
	if (h->checksum != gnn_graph_header_checksum(h) || h->total_bytes > size)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region header is corrupt");

	uint64_t	n = h->num_nodes,
				m = h->num_edges;

	if (h->num_nodes < 0 || h->num_edges < 0 || h->feat_nnz < 0 || h->feat_dim < 0 ||
		n >= size || m >= size || (uint64_t) h->feat_nnz >= size ||
		(h->off_feat && h->feat_dim > 0 && n > size / (uint64_t) h->feat_dim) ||
		!span_ok(h->off_ids, n, 8, size) ||
		!span_ok(h->off_indptr, n + 1, 8, size) ||
		!span_ok(h->off_indices, m, 4, size) ||
		!span_ok(h->off_rindptr, n + 1, 8, size) ||
		!span_ok(h->off_rindices, m, 4, size) ||
		(h->off_weights && !span_ok(h->off_weights, m, 4, size)) ||
		(h->off_rweights && !span_ok(h->off_rweights, m, 4, size)) ||
		(h->off_feat && !span_ok(h->off_feat, n * (uint64_t) h->feat_dim, 4, size)) ||
		(h->off_fptr && !span_ok(h->off_fptr, n + 1, 8, size)) ||
		(h->off_fidx && !span_ok(h->off_fidx, (uint64_t) h->feat_nnz, 4, size)) ||
		(h->off_fval && !span_ok(h->off_fval, (uint64_t) h->feat_nnz, 4, size)) ||
		(h->off_labels && !span_ok(h->off_labels, n, 4, size)) ||
		(h->off_split && !span_ok(h->off_split, n, 1, size)) ||
		(h->off_class_names && !span_ok(h->off_class_names, h->class_names_bytes, 1, size)) ||
		(h->off_arc_rows && !span_ok(h->off_arc_rows, m, 4, size)) ||
		(h->off_part && (!span_ok(h->off_part, n, 4, size) || h->part < 0 || h->n_owned < 0 ||
						 h->n_owned > h->num_nodes)))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region arrays fall outside the region");
	if (!types_ok(h, size))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region types or keys are inconsistent");

	g->num_nodes = h->num_nodes;
	g->num_edges = h->num_edges;
	g->ids = (const int64_t *) (base + h->off_ids);
	g->indptr = (const int64_t *) (base + h->off_indptr);
	g->indices = (const int32_t *) (base + h->off_indices);
	g->weights = h->off_weights ? (const float *) (base + h->off_weights) : NULL;
	g->rindptr = (const int64_t *) (base + h->off_rindptr);
	g->rindices = (const int32_t *) (base + h->off_rindices);
	g->rweights = h->off_rweights ? (const float *) (base + h->off_rweights) : NULL;
	g->weighted = h->weighted != 0;
	g->feat_kind = h->feat_kind;
	g->feat_dim = h->feat_dim;
	g->feat_nnz = h->feat_nnz;
	g->feat = h->off_feat ? (const float *) (base + h->off_feat) : NULL;
	g->fptr = h->off_fptr ? (const int64_t *) (base + h->off_fptr) : NULL;
	g->fidx = h->off_fidx ? (const int32_t *) (base + h->off_fidx) : NULL;
	g->fval = h->off_fval ? (const float *) (base + h->off_fval) : NULL;
	g->num_classes = h->num_classes;
	g->labels = h->off_labels ? (const int32_t *) (base + h->off_labels) : NULL;
	g->split = h->off_split ? (const uint8_t *) (base + h->off_split) : NULL;
	g->class_names = h->off_class_names ? base + h->off_class_names : NULL;
	g->class_names_bytes = h->class_names_bytes;
	g->n_train = h->n_train;
	g->n_val = h->n_val;
	g->n_test = h->n_test;
	g->num_node_types = h->num_node_types;
	g->type_ptr = (const int64_t *) (base + h->off_type_ptr);
	g->node_type = h->off_node_type ? (const int16_t *) (base + h->off_node_type) : NULL;
	g->num_edge_types = h->num_edge_types;
	g->etypes = (const gnn_edge_type *) (base + h->off_etypes);
	g->arc_type = h->off_arc_type ? (const int16_t *) (base + h->off_arc_type) : NULL;
	g->rarc_type = h->off_rarc_type ? (const int16_t *) (base + h->off_rarc_type) : NULL;
	g->type_names = h->off_type_names ? base + h->off_type_names : NULL;
	g->type_names_bytes = h->off_type_names ? h->type_names_bytes : 0;
	g->keys = h->off_keys ? (const int64_t *) (base + h->off_keys) : g->ids;
	g->key_off = h->off_key_off ? (const int64_t *) (base + h->off_key_off) : NULL;
	g->key_bytes = h->off_key_off ? base + h->off_key_bytes : NULL;
	g->type_text_key = h->off_key_off ? (const uint8_t *) (base + h->off_type_text_key) : NULL;
	g->time = h->off_time ? (const int64_t *) (base + h->off_time) : NULL;
	g->seed_time = h->off_seed_time ? (const int64_t *) (base + h->off_seed_time) : NULL;
	g->arc_rows = h->off_arc_rows ? (const int32_t *) (base + h->off_arc_rows) : NULL;
	g->region = region;
	g->targets = h->off_targets ? (const float *) (base + h->off_targets) : NULL;
	g->meta = h->off_meta ? base + h->off_meta : NULL;
	g->meta_bytes = h->off_meta ? h->meta_bytes : 0;
	g->node_part = h->off_part ? (const int32_t *) (base + h->off_part) : NULL;
	g->part = h->off_part ? h->part : 0;
	g->n_owned = h->off_part ? h->n_owned : h->num_nodes;
	return GNN_OK;
}

int64_t
gnn_graph_find(const gnn_graph *g, int64_t id)
{
	int64_t		lo = 0,
				hi = g->num_nodes;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (g->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < g->num_nodes && g->ids[lo] == id) ? lo : -1;
}

/* lo..hi bounds of node type t's index range; false when t is not a type */
static inline bool
type_range(const gnn_graph *g, int32_t t, int64_t *lo, int64_t *hi)
{
	if (t < 0 || t >= g->num_node_types)
		return false;
	*lo = g->type_ptr[t];
	*hi = g->type_ptr[t + 1];
	return true;
}

int64_t
gnn_graph_find_typed(const gnn_graph *g, int32_t t, int64_t key)
{
	if (t >= 0 && t < g->num_node_types && g->type_text_key && g->type_text_key[t])
		return -1;
	return gnn_graph_find_key(g, t, key);
}

int64_t
gnn_graph_find_key(const gnn_graph *g, int32_t t, int64_t key)
{
	int64_t		lo,
				hi,
				end;

	if (!type_range(g, t, &lo, &hi))
		return -1;
	end = hi;
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (g->keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < end && g->keys[lo] == key) ? lo : -1;
}

int64_t
gnn_graph_find_text(const gnn_graph *g, int32_t t, const char *key, size_t len)
{
	int64_t		lo,
				hi;

	if (!type_range(g, t, &lo, &hi) || !g->key_off || !g->type_text_key[t])
		return -1;
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2,
					a = g->key_off[mid],
					b = g->key_off[mid + 1];

		/* attach checked only the ends of the offsets: stay inside the bytes */
		if (a < 0 || b < a || b > g->key_off[g->num_nodes])
			return -1;
		int			c = key_cmp(g->key_bytes + a, b - a, key, len);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Name number idx of the graph (node types, then relations), or NULL. */
static const char *
graph_name(const gnn_graph *g, int32_t idx)
{
	const char *p = g->type_names,
			   *end;

	if (!p || idx < 0)
		return NULL;
	end = p + g->type_names_bytes;
	for (int32_t i = 0; p < end; i++)
	{
		if (i == idx)
			return p;
		p += strlen(p) + 1;		/* attach checked that the names end in a NUL */
	}
	return NULL;
}

const char *
gnn_graph_node_type_name(const gnn_graph *g, int32_t t)
{
	return t >= 0 && t < g->num_node_types ? graph_name(g, t) : NULL;
}

const char *
gnn_graph_edge_type_name(const gnn_graph *g, int32_t r)
{
	return r >= 0 && r < g->num_edge_types ? graph_name(g, g->num_node_types + r) : NULL;
}

int32_t
gnn_graph_node_type_by_name(const gnn_graph *g, const char *name)
{
	for (int32_t t = 0; t < g->num_node_types; t++)
	{
		const char *s = graph_name(g, t);

		if (!s)
			return -1;
		if (strcmp(s, name) == 0)
			return t;
	}
	return -1;
}

int32_t
gnn_graph_edge_type_by_name(const gnn_graph *g, const char *name)
{
	for (int32_t r = 0; r < g->num_edge_types; r++)
	{
		const char *s = graph_name(g, g->num_node_types + r);

		if (!s)
			return -1;
		if (strcmp(s, name) == 0)
			return r;
	}
	return -1;
}

void *
gnn_graph_malloc_region(void *arg, uint64_t bytes)
{
	(void) arg;
	return aligned_alloc(64, ALIGN64(bytes));
}

/* gnn_graph_malloc_region, noting the region in *arg (freed if the build then fails) */
static void *
malloc_region_noted(void *arg, uint64_t bytes)
{
	return *(void **) arg = gnn_graph_malloc_region(NULL, bytes);
}

gnn_status
gnn_graph_build_region(const gnn_graph_input *in, void **region, uint64_t *size,
					   gnn_graph *g, gnn_error *err)
{
	void	   *got = NULL;
	gnn_status	st = gnn_graph_build_into(in, malloc_region_noted, &got, region, size, err);

	if (st != GNN_OK)
	{
		free(got);
		return st;
	}
	st = gnn_graph_attach(*region, *size, g, err);
	if (st != GNN_OK)
	{
		free(*region);
		*region = NULL;
		*size = 0;
	}
	return st;
}
