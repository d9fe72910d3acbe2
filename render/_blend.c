/* The watermark pattern's blend: a request's pieces of grey ink and halo, composited through
 * their own opacity onto an RGBX canvas at every corner of the lattice (render/pattern.py).
 *
 * Pillow's paste does the same arithmetic one byte at a time, and over a page's thousand-odd
 * pieces it cost more than PDFium's render of a light page. Here every piece arrives expanded
 * to four bytes a pixel (its opacity is 0 on the X byte), so the inner loop is one plain run of
 * bytes that the compiler vectorises, and the whole page is blended in one call with the GIL
 * released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define PIXEL_BYTES 4

typedef struct {
    Py_ssize_t dx, dy, width, height;
    Py_buffer colour, alpha, marked; /* marked.buf is NULL when the piece has no such plane */
} Piece;

/* A chip pattern fixed to the canvas: a square of chips x chips cells of chip x chip pixels
 * repeated from (0, 0); a piece's `marked` opacity replaces its own on the cells set to 1. */
typedef struct {
    Py_buffer cells;
    Py_ssize_t chip, chips;
} ChipMask;

/* out = out * (255 - a) / 255 + colour * a / 255, rounded; every step fits in 16 bits, which
 * is what lets gcc and clang work on 8 or 16 bytes at once. */
static void
blend_run(uint8_t *restrict out, const uint8_t *restrict colour,
          const uint8_t *restrict alpha, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        uint16_t a = alpha[i];
        uint16_t v = (uint16_t)(out[i] * (255 - a) + colour[i] * a + 128);
        out[i] = (uint8_t)((v + (v >> 8)) >> 8);
    }
}

/* One row of a piece, its opacity switched chip by chip: `alpha` on cells of the mask set to
 * 0, `marked` on those set to 1. Runs end where the cell changes, each still vectorised. */
static void
blend_masked_row(uint8_t *out, const uint8_t *colour, const uint8_t *alpha,
                 const uint8_t *marked, Py_ssize_t x0, Py_ssize_t x1, Py_ssize_t row,
                 const ChipMask *mask)
{
    const uint8_t *cells = mask->cells.buf;
    const Py_ssize_t chip = mask->chip, chips = mask->chips;
    const uint8_t *cell_row = cells + ((row / chip) % chips) * chips;
    /* The cell and its end are stepped, not divided for; neighbouring cells set alike are one
     * run (half the calls for a random pattern). */
    Py_ssize_t cell = (x0 / chip) % chips, end = (x0 / chip + 1) * chip, x = x0;
    while (x < x1) {
        uint8_t set = cell_row[cell];
        while (end < x1 && cell_row[cell + 1 == chips ? 0 : cell + 1] == set) {
            cell = cell + 1 == chips ? 0 : cell + 1;
            end += chip;
        }
        Py_ssize_t stop = end < x1 ? end : x1;
        Py_ssize_t at = (x - x0) * PIXEL_BYTES;
        blend_run(out + at, colour + at, (set ? marked : alpha) + at, (stop - x) * PIXEL_BYTES);
        x = stop;
        cell = cell + 1 == chips ? 0 : cell + 1;
        end += chip;
    }
}

static void
blend_piece(uint8_t *canvas, Py_ssize_t stride, Py_ssize_t right, Py_ssize_t bottom,
            Py_ssize_t left, Py_ssize_t top, const Piece *piece, const ChipMask *mask)
{
    Py_ssize_t x = left + piece->dx, y = top + piece->dy;
    Py_ssize_t x0 = x > 0 ? x : 0, y0 = y > 0 ? y : 0;
    Py_ssize_t x1 = x + piece->width < right ? x + piece->width : right;
    Py_ssize_t y1 = y + piece->height < bottom ? y + piece->height : bottom;
    if (x0 >= x1 || y0 >= y1) {
        return;
    }
    const uint8_t *colour = piece->colour.buf, *alpha = piece->alpha.buf;
    const uint8_t *marked = piece->marked.buf;
    Py_ssize_t piece_stride = piece->width * PIXEL_BYTES;
    for (Py_ssize_t row = y0; row < y1; row++) {
        Py_ssize_t at = (row - y) * piece_stride + (x0 - x) * PIXEL_BYTES;
        uint8_t *out = canvas + row * stride + x0 * PIXEL_BYTES;
        if (mask != NULL && marked != NULL) {
            blend_masked_row(out, colour + at, alpha + at, marked + at, x0, x1, row, mask);
        } else {
            blend_run(out, colour + at, alpha + at, (x1 - x0) * PIXEL_BYTES);
        }
    }
}

static void
release_pieces(Piece *pieces, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        PyBuffer_Release(&pieces[i].colour);
        PyBuffer_Release(&pieces[i].alpha);
        if (pieces[i].marked.obj != NULL) {
            PyBuffer_Release(&pieces[i].marked);
        }
    }
    PyMem_Free(pieces);
}

/* Reads (dx, dy, width, height, colour, alpha[, marked or None]) tuples; NULL with an exception set if
 * any is malformed, so no pixel is touched for a bad call. */
static Piece *
read_pieces(PyObject *sequence, Py_ssize_t *count)
{
    PyObject *fast = PySequence_Fast(sequence, "pieces must be a sequence");
    if (fast == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    Piece *pieces = PyMem_Calloc(n > 0 ? n : 1, sizeof(Piece));
    Py_ssize_t read = 0;
    if (pieces == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (; read < n; read++) {
        Piece *p = &pieces[read];
        PyObject *item = PySequence_Fast_GET_ITEM(fast, read);
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "a piece must be a tuple");
            goto fail;
        }
        PyObject *marked = Py_None;
        if (!PyArg_ParseTuple(item, "nnnny*y*|O", &p->dx, &p->dy, &p->width, &p->height,
                              &p->colour, &p->alpha, &marked)) {
            goto fail;
        }
        if (marked != Py_None && PyObject_GetBuffer(marked, &p->marked, PyBUF_SIMPLE) < 0) {
            read++; /* its colour and alpha were taken: release them too */
            goto fail;
        }
        int sane = p->width >= 0 && p->height >= 0 &&
                   (p->width == 0 || p->height <= PY_SSIZE_T_MAX / PIXEL_BYTES / p->width);
        Py_ssize_t bytes = sane ? p->width * p->height * PIXEL_BYTES : -1;
        if (!sane || p->colour.len != bytes || p->alpha.len != bytes ||
            (p->marked.obj != NULL && p->marked.len != bytes)) {
            read++; /* its buffers were taken: release them too */
            PyErr_SetString(PyExc_ValueError, "a piece's planes do not match its size");
            goto fail;
        }
    }
    Py_DECREF(fast);
    *count = n;
    return pieces;
fail:
    if (pieces != NULL) {
        release_pieces(pieces, read);
    }
    Py_DECREF(fast);
    return NULL;
}

/* Corners as (left, top) pairs, in a new array of 2 * count values. */
static Py_ssize_t *
read_corners(PyObject *sequence, Py_ssize_t *count)
{
    PyObject *fast = PySequence_Fast(sequence, "corners must be a sequence");
    if (fast == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    Py_ssize_t *corners = PyMem_Calloc(n > 0 ? 2 * n : 1, sizeof(Py_ssize_t));
    if (corners == NULL) {
        PyErr_NoMemory();
        Py_DECREF(fast);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "a corner must be a tuple");
            goto fail;
        }
        if (!PyArg_ParseTuple(item, "nn", &corners[2 * i], &corners[2 * i + 1])) {
            goto fail;
        }
    }
    Py_DECREF(fast);
    *count = n;
    return corners;
fail:
    PyMem_Free(corners);
    Py_DECREF(fast);
    return NULL;
}

/* The optional mask argument: None, or (cells, chip, chips) with chips * chips cells. */
static int
read_mask(PyObject *object, ChipMask *mask)
{
    if (!PyTuple_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "the mask must be a tuple (cells, chip, chips)");
        return 0;
    }
    if (!PyArg_ParseTuple(object, "y*nn", &mask->cells, &mask->chip, &mask->chips)) {
        return 0;
    }
    if (mask->chip <= 0 || mask->chips <= 0 || mask->chips > 4096 ||
        mask->cells.len != mask->chips * mask->chips) {
        PyBuffer_Release(&mask->cells);
        PyErr_SetString(PyExc_ValueError, "the mask's cells do not match its size");
        return 0;
    }
    return 1;
}

static PyObject *
paste(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer canvas;
    Py_ssize_t stride, right, bottom, piece_count = 0, corner_count = 0;
    PyObject *corner_list, *piece_list, *mask_object = Py_None;
    ChipMask mask;
    if (!PyArg_ParseTuple(args, "w*n(nn)OO|O:paste", &canvas, &stride, &right, &bottom,
                          &corner_list, &piece_list, &mask_object)) {
        return NULL;
    }
    if (right < 0 || bottom < 0 || stride < right * PIXEL_BYTES || canvas.len < stride * bottom) {
        PyBuffer_Release(&canvas);
        PyErr_SetString(PyExc_ValueError, "the area does not fit the canvas");
        return NULL;
    }
    int masked = mask_object != Py_None;
    if (masked && !read_mask(mask_object, &mask)) {
        PyBuffer_Release(&canvas);
        return NULL;
    }
    Py_ssize_t *corners = read_corners(corner_list, &corner_count);
    Piece *pieces = corners == NULL ? NULL : read_pieces(piece_list, &piece_count);
    if (pieces == NULL) {
        PyMem_Free(corners);
        if (masked) {
            PyBuffer_Release(&mask.cells);
        }
        PyBuffer_Release(&canvas);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t c = 0; c < corner_count; c++) {
        for (Py_ssize_t i = 0; i < piece_count; i++) {
            blend_piece(canvas.buf, stride, right, bottom, corners[2 * c], corners[2 * c + 1],
                        &pieces[i], masked ? &mask : NULL);
        }
    }
    Py_END_ALLOW_THREADS
    release_pieces(pieces, piece_count);
    PyMem_Free(corners);
    if (masked) {
        PyBuffer_Release(&mask.cells);
    }
    PyBuffer_Release(&canvas);
    Py_RETURN_NONE;
}

/* A page kept as one grey byte a pixel (render/page_cache.py) back into the RGBX canvas:
 * R = G = B = the grey, X = 255. Pillow's L-to-RGBX paste took three times as long. */
static PyObject *
expand_grey(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer canvas, grey;
    Py_ssize_t stride, width, height;
    if (!PyArg_ParseTuple(args, "w*ny*nn:expand_grey", &canvas, &stride, &grey, &width,
                          &height)) {
        return NULL;
    }
    if (width < 0 || height < 0 || stride < width * PIXEL_BYTES || canvas.len < stride * height
        || grey.len < width * height) {
        PyBuffer_Release(&canvas);
        PyBuffer_Release(&grey);
        PyErr_SetString(PyExc_ValueError, "the grey rows do not fit the canvas");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t y = 0; y < height; y++) {
        const uint8_t *restrict in = (const uint8_t *)grey.buf + y * width;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* One 32-bit store a pixel (bytes R, G, B, X in memory): vectorised by the compiler. */
        uint32_t *restrict out = (uint32_t *)((uint8_t *)canvas.buf + y * stride);
        for (Py_ssize_t x = 0; x < width; x++) {
            out[x] = 0xFF000000u | (uint32_t)in[x] * 0x010101u;
        }
#else
        uint8_t *restrict out = (uint8_t *)canvas.buf + y * stride;
        for (Py_ssize_t x = 0; x < width; x++, out += PIXEL_BYTES) {
            out[0] = out[1] = out[2] = in[x];
            out[3] = 255;
        }
#endif
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&canvas);
    PyBuffer_Release(&grey);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"expand_grey", expand_grey, METH_VARARGS,
     "expand_grey(canvas, stride, grey, width, height)\n--\n\n"
     "Write `height` rows of `width` grey bytes into the RGBX `canvas` as R = G = B = grey,\n"
     "X = 255."},
    {"paste", paste, METH_VARARGS,
     "paste(canvas, stride, (right, bottom), corners, pieces, mask=None)\n--\n\n"
     "Blend every piece at every corner into the RGBX `canvas` (a writable buffer, `stride`\n"
     "bytes a row), clipped to its top-left `right` x `bottom` pixels. A piece is\n"
     "(dx, dy, width, height, colour, alpha[, marked]): offsets from the corner, and planes\n"
     "of width * height * 4 bytes. With a mask (cells, chip, chips), a piece's `marked`\n"
     "opacity is used instead of `alpha` on the canvas's chips whose cell is set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "render._blend",
    .m_doc = "The watermark pattern's blend onto an RGBX canvas.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__blend(void)
{
    return PyModule_Create(&module);
}
