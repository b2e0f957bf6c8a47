/* lib/core/blas.h — OpenBLAS set up once for quanta's BLAS users (internal).
 *
 * qt__blas_pin() before every BLAS call: the first call corrects OpenBLAS's
 * choice of kernels where Debian's 0.3.21 picks fewer than the CPU runs
 * (blas.c), and every call pins OpenBLAS to one thread (its own threads would
 * split reductions by their count; quanta splits work in fixed units itself).
 */
#ifndef QT_CORE_BLAS_H
#define QT_CORE_BLAS_H

void qt__blas_pin(void);
const char *qt__blas_core(void); /* OpenBLAS's kernel set once qt__blas_pin ran ("Cooperlake", "Haswell", ...) */
const char *qt__blas_core_note(void); /* "" or why quanta changed OpenBLAS's choice ("Prescott -> Cooperlake") */

#endif
