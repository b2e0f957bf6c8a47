/* lib/quant/decode_pf.h — how far ahead the batch-1 (decode) kernels prefetch the
 * weights they stream (internal). A prefetch is a hint: past the end of a matrix it
 * cannot fault, and it changes no arithmetic, so every kernel keeps its bits.
 *
 * Decode reads each weight byte once per token. One core keeps only so many cache
 * lines in flight; a kernel whose loads also wait on its own arithmetic issues them
 * late, and a tile that reads several rows side by side runs several short streams the
 * hardware prefetchers pick up late at each row start. Measured on the 1B's output
 * matrix (128256 x 2048, out of cache, bench_gemm --batch 1 --shape 128256), one thread,
 * weight GB per thread CPU-second, median of 3-5 interleaved runs on a shared 2-vCPU Xeon
 * (AVX-512 VNNI/BF16/AMX; load average 3-10), 2026-12-03; a plain AVX-512 read loop on
 * 2 MiB pages reads 15.3 there (16.0 with prefetch):
 *
 *   kernel (level)            none   chosen   other distances
 *   x16 q4_0 (avx512)         12.0   14.9     512 B 14.2, 2048 B 14.4, 4096 B 11.1
 *   x16 q8_0 (avx512)         14.5   16.0     512 B 15.9, 2048 B 16.1
 *   x16 q4_0 (avx2)           12.4   12.9     512 B 12.5, 2048 B 12.7
 *   ct4 w4g128 fast (avx512)   9.1   14.2     8 rows 14.0
 *   ct4 w4g128 fast (avx2)     9.6   13.9     2 rows 13.9, 8 rows 13.6
 *
 * Not prefetched, measured no gain: the k16 K-quant tiles in 2 MiB pages (gemm_k16_avx512.c
 * K16_PF; q6_K 13.3 none, 13.1 at 1024 B, 12.9 at 2048 B) and F16 rows side by side (a32
 * avx512 13.6 none, 14.1 one tile ahead; avx2 13.1 none, 12.1 one tile ahead: within noise,
 * both at that machine's 4 KiB-page read rate, ~14). */
#ifndef QT_QUANT_DECODE_PF_H
#define QT_QUANT_DECODE_PF_H

/* x16 groups (gemm.h): one stream per group, 16 rows' blocks side by side; each block step
 * prefetches the block this many bytes ahead (AVX2 and AVX-512 alike). */
#define QT_X16_PF_BYTES 1024

/* int4 g128 compressed-tensors rows (ct4.h), --numerics fast: a decode tile of rows
 * prefetches, group by group, the same place in the rows this many rows further on
 * (the AVX-512 kernel's next 4-row tile, the AVX2 kernel's next two 2-row passes). */
#define QT_CT4_PF_ROWS 4

#endif
