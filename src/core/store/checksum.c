/*
 * checksum.c: CRC-32C of the store files (gnn_crc32c; see store.h), by
 * table or by the CPU's crc32 instruction.  Split out of store.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* O_DIRECT */
#endif
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
/* ------------------------------------------------------------------ CRC-32C */

static uint32_t crc_table[8][256];
static int	crc_ready;

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

/* slicing by 8: portable, about 1-2 GB/s */
static uint32_t
crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	while (n >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		w ^= c;
		c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^ crc_table[5][(w >> 16) & 0xff] ^
			crc_table[4][(w >> 24) & 0xff] ^ crc_table[3][(w >> 32) & 0xff] ^
			crc_table[2][(w >> 40) & 0xff] ^ crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c;
}

/*
 * a * b modulo the CRC-32C polynomial, both in the CRC's bit-reflected form
 * (bit 31 holds x^0): what shifting a CRC register over zero bytes does.
 */
static uint32_t
crc_mulmod(uint32_t a, uint32_t b)
{
	uint32_t	prod = 0;

	for (int i = 0; i < 32; i++)
	{
		if (a & 0x80000000u)
			prod ^= b;
		a <<= 1;
		b = b & 1 ? (b >> 1) ^ 0x82f63b78u : b >> 1;
	}
	return prod;
}

/* x^(8 n) modulo the polynomial: the factor that moves a register past n bytes */
static uint32_t
crc_shift_factor(uint64_t n)
{
	uint32_t	sq = 0x40000000u,	/* x^1, squared up to x^(2^k) as k goes */
				p = 0x80000000u;	/* x^0 */

	n *= 8;
	while (n)
	{
		if (n & 1)
			p = crc_mulmod(sq, p);
		sq = crc_mulmod(sq, sq);
		n >>= 1;
	}
	return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * SSE 4.2's crc32 instruction, 8 bytes at a time.  One register is bound by
 * the instruction's latency (3 cycles per 8 bytes); three interleaved
 * streams over adjacent blocks keep it busy every cycle, and the three
 * registers are then combined (CRC is linear: the first block's register,
 * moved past the other two blocks, xor the second's moved past the third,
 * xor the third's).
 */
#define CRC_BLOCK 8192

__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t	cc = c;

	while (n && ((uintptr_t) p & 7))
	{
		cc = __builtin_ia32_crc32qi((uint32_t) cc, *p++);
		n--;
	}
	if (n >= 3 * CRC_BLOCK)
	{
		static uint32_t k1,
					k2;			/* x^(8 CRC_BLOCK), x^(16 CRC_BLOCK) */

		if (!__atomic_load_n(&k2, __ATOMIC_ACQUIRE))
		{
			__atomic_store_n(&k1, crc_shift_factor(CRC_BLOCK), __ATOMIC_RELAXED);
			__atomic_store_n(&k2, crc_shift_factor(2 * CRC_BLOCK), __ATOMIC_RELEASE);
		}
		while (n >= 3 * CRC_BLOCK)
		{
			uint64_t	c1 = 0,
						c2 = 0;

			for (size_t i = 0; i < CRC_BLOCK; i += 8)
			{
				uint64_t	w0,
							w1,
							w2;

				memcpy(&w0, p + i, 8);
				memcpy(&w1, p + CRC_BLOCK + i, 8);
				memcpy(&w2, p + 2 * CRC_BLOCK + i, 8);
				cc = __builtin_ia32_crc32di(cc, w0);
				c1 = __builtin_ia32_crc32di(c1, w1);
				c2 = __builtin_ia32_crc32di(c2, w2);
			}
			cc = crc_mulmod(__atomic_load_n(&k2, __ATOMIC_RELAXED), (uint32_t) cc) ^
				crc_mulmod(__atomic_load_n(&k1, __ATOMIC_RELAXED), (uint32_t) c1) ^ (uint32_t) c2;
			p += 3 * CRC_BLOCK;
			n -= 3 * CRC_BLOCK;
		}
	}
	while (n >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		cc = __builtin_ia32_crc32di(cc, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		cc = __builtin_ia32_crc32qi((uint32_t) cc, *p++);
	return (uint32_t) cc;
}
#endif

uint32_t
gnn_crc32c(uint32_t crc, const void *data, size_t n)
{
	uint32_t	c = ~crc;

#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(c, data, n);
#endif
	return ~crc_soft(c, data, n);
}
