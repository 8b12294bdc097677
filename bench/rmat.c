/*
 * rmat.c: R-MAT edge and node tables in PostgreSQL's binary COPY format.
 *
 *   rmat edges SCALE EDGES [SEED]   -> rows (src int4, dst int4), ids in 0 .. 2^SCALE-1
 *   rmat nodes SCALE DIM [SEED]     -> rows (id int4, feat real[DIM]), ids 0 .. 2^SCALE-1
 *
 * R-MAT (Chakrabarti et al. 2004) with a=0.57, b=0.19, c=0.19, d=0.05 (the
 * Graph500 parameters): each edge picks one quadrant per bit of the id.  The
 * output is deterministic for a given seed (xoshiro256** RNG).  Duplicate
 * edges and self loops are kept, as a real edge table may hold them.
 * Pipe into: COPY t FROM STDIN WITH (FORMAT binary).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t s[4];

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t
next(void)
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
	s[2] ^= t; s[3] = rotl(s[3], 45);
	return r;
}

static void
seed(uint64_t x)
{
	for (int i = 0; i < 4; i++)
	{	/* splitmix64 */
		uint64_t z = (x += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		s[i] = z ^ (z >> 31);
	}
}

static inline double unif(void) { return (next() >> 11) * 0x1.0p-53; }

static char buf[1 << 16];
static size_t bl;

static inline void
out(const void *p, size_t n)
{
	if (bl + n > sizeof(buf))
	{
		fwrite(buf, 1, bl, stdout);
		bl = 0;
	}
	memcpy(buf + bl, p, n);
	bl += n;
}
static inline void put16(uint16_t x) { x = __builtin_bswap16(x); out(&x, 2); }
static inline void put32(uint32_t x) { x = __builtin_bswap32(x); out(&x, 4); }

int
main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "edges") && strcmp(argv[1], "nodes")))
	{
		fprintf(stderr, "usage: rmat edges SCALE EDGES [SEED] | rmat nodes SCALE DIM [SEED]\n");
		return 2;
	}
	int scale = atoi(argv[2]);
	long long count = atoll(argv[3]);
	seed(argc > 4 ? strtoull(argv[4], NULL, 10) : 42);
	if (scale < 1 || scale > 30 || count < 1)
	{
		fprintf(stderr, "rmat: bad scale or count\n");
		return 2;
	}
	out("PGCOPY\n\377\r\n\0", 11);
	put32(0);					/* flags */
	put32(0);					/* header extension length */
	if (argv[1][0] == 'e')
	{
		const double a = 0.57, b = 0.19, c = 0.19;

		for (long long e = 0; e < count; e++)
		{
			uint32_t u = 0, v = 0;

			for (int bit = 0; bit < scale; bit++)
			{
				double r = unif();

				u <<= 1; v <<= 1;
				if (r < a) ;
				else if (r < a + b) v |= 1;
				else if (r < a + b + c) u |= 1;
				else { u |= 1; v |= 1; }
			}
			put16(2);
			put32(4); put32(u);
			put32(4); put32(v);
		}
	}
	else
	{
		int dim = (int) count;
		uint32_t n = 1u << scale;

		for (uint32_t id = 0; id < n; id++)
		{
			put16(2);
			put32(4); put32(id);
			put32(20 + 8 * dim);	/* array: ndim, hasnull, elemtype, dim, lbound, elements */
			put32(1); put32(0); put32(700);
			put32(dim); put32(1);
			for (int j = 0; j < dim; j++)
			{
				float f = (float) (unif() * 2.0 - 1.0);
				uint32_t bits;

				memcpy(&bits, &f, 4);
				put32(4); put32(bits);
			}
		}
	}
	put16(0xffff);				/* trailer */
	fwrite(buf, 1, bl, stdout);
	return ferror(stdout) ? 1 : 0;
}
