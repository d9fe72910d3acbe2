/* What the two C extensions share (render/kernels/_blend.c, render/kernels/_paper.c): the RGBX pixel, the
 * invisible mark's chip mask as Python passes it, and how the per-pixel loops are compiled. */
#ifndef VAULTD_CHIPMASK_H
#define VAULTD_CHIPMASK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define PIXEL_BYTES 4

/* The per-pixel loops are compiled twice where GCC can pick at run time (x86-64 Linux): for
 * AVX2, 32 bytes a vector, and for the baseline SSE2, 16. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define WIDE_VECTORS __attribute__((target_clones("avx2", "default")))
#else
#define WIDE_VECTORS
#endif

/* The invisible mark's chips, fixed to the canvas: a square of chips x chips cells of chip x
 * chip pixels repeated from (0, 0). On the cells set to 1 the pattern's letters take their
 * `marked` opacity (_blend.c) and the paper is darkened (_paper.c). */
typedef struct {
    Py_buffer cells;
    Py_ssize_t chip, chips;
} ChipMask;

/* A mask argument: (cells, chip, chips) with chips * chips cells; 0 with an exception set if
 * it is not one (nothing is held then). */
static inline int
read_mask(PyObject *object, ChipMask *mask)
{
    if (!PyTuple_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "the mask must be a tuple (cells, chip, chips)");
        return 0;
    }
    if (!PyArg_ParseTuple(object, "y*nn", &mask->cells, &mask->chip, &mask->chips)) {
        return 0;
    }
    if (mask->chip <= 0 || mask->chip > 4096 || mask->chips <= 0 || mask->chips > 4096 ||
        mask->cells.len != mask->chips * mask->chips) {
        PyBuffer_Release(&mask->cells);
        PyErr_SetString(PyExc_ValueError, "the mask's cells do not match its size");
        return 0;
    }
    return 1;
}

#endif
