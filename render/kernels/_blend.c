/* The watermark pattern's blend: a request's pieces of grey ink and halo, composited through
 * their own opacity onto an RGBX canvas at every corner of the lattice (render/watermark/pattern.py).
 *
 * Pillow's paste does the same arithmetic one byte at a time, and over a page's thousand-odd
 * pieces it cost more than PDFium's render of a light page. Here every piece arrives expanded
 * to four bytes a pixel (its opacity is 0 on the X byte), so the inner loop is one plain run of
 * bytes that the compiler vectorises, and the whole page is blended in one call with the GIL
 * released.
 *
 * The invisible mark's darkening of the paper and a kept page's copy back are render/kernels/_paper.c.
 */
#include "_chipmask.h"

typedef struct {
    Py_ssize_t dx, dy, width, height;
    Py_buffer colour, alpha, marked; /* marked.buf is NULL when the piece has no such plane */
} Piece;

/* out = out * (255 - a) / 255 + colour * a / 255, rounded; every step fits in 16 bits, which
 * is what lets gcc and clang work on 8 or 16 bytes at once. */
WIDE_VECTORS static void
blend_run(uint8_t *restrict out, const uint8_t *restrict colour,
          const uint8_t *restrict alpha, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        uint16_t a = alpha[i];
        uint16_t v = (uint16_t)(out[i] * (255 - a) + colour[i] * a + 128);
        out[i] = (uint8_t)((v + (v >> 8)) >> 8);
    }
}

/* One row of a piece with its opacity chosen byte by byte: `marked` where `select` is 0xFF
 * (the canvas's chip is set in the mask), `alpha` where it is 0. Branchless, so the row stays
 * one vectorised loop however often the chips change along it. */
WIDE_VECTORS static void
blend_selected_run(uint8_t *restrict out, const uint8_t *restrict colour,
                   const uint8_t *restrict alpha, const uint8_t *restrict marked,
                   const uint8_t *restrict select, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        uint16_t a = (uint8_t)(alpha[i] ^ ((alpha[i] ^ marked[i]) & select[i]));
        uint16_t v = (uint16_t)(out[i] * (255 - a) + colour[i] * a + 128);
        out[i] = (uint8_t)((v + (v >> 8)) >> 8);
    }
}

/* The mask laid out for `blend_selected_run`: one row of select bytes (4 a pixel) per row of
 * cells, `width` pixels long from the start of a period, so a piece starting at any x reads
 * its bytes from (x % period) onwards without wrapping. Rows of one cell row are alike, so
 * there are only `chips` of them (47 KB for a 24-cell mask and 300-px pieces). */
typedef struct {
    uint8_t *bytes;
    Py_ssize_t row_bytes, period, chip, chips;
} SelectTable;

static int
build_select(const ChipMask *mask, Py_ssize_t widest, SelectTable *table)
{
    const uint8_t *cells = mask->cells.buf;
    table->chip = mask->chip;
    table->chips = mask->chips;
    table->period = mask->chip * mask->chips;
    Py_ssize_t width = table->period + widest;
    table->row_bytes = width * PIXEL_BYTES;
    table->bytes = PyMem_Malloc(table->chips * table->row_bytes);
    if (table->bytes == NULL) {
        return 0;
    }
    const Py_ssize_t chip_bytes = table->chip * PIXEL_BYTES;
    const Py_ssize_t period_bytes = chip_bytes * table->chips;
    for (Py_ssize_t r = 0; r < table->chips; r++) {
        uint8_t *row = table->bytes + r * table->row_bytes;
        for (Py_ssize_t c = 0; c < table->chips; c++) {
            Py_ssize_t at = c * chip_bytes;
            Py_ssize_t bytes = at + chip_bytes <= table->row_bytes ? chip_bytes
                                                                   : table->row_bytes - at;
            if (bytes > 0) {
                memset(row + at, cells[r * table->chips + c] ? 0xFF : 0, (size_t)bytes);
            }
        }
        /* The rest repeats the first period (no division per pixel: this runs per page). */
        for (Py_ssize_t at = period_bytes; at < table->row_bytes; at += period_bytes) {
            Py_ssize_t bytes = at + period_bytes <= table->row_bytes ? period_bytes
                                                                     : table->row_bytes - at;
            memcpy(row + at, row, (size_t)bytes);
        }
    }
    return 1;
}

static void
blend_piece(uint8_t *canvas, Py_ssize_t stride, Py_ssize_t right, Py_ssize_t bottom,
            Py_ssize_t left, Py_ssize_t top, const Piece *piece, const SelectTable *select)
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
        if (select != NULL && marked != NULL) {
            const uint8_t *choose = select->bytes + ((row / select->chip) % select->chips) *
                                    select->row_bytes + (x0 % select->period) * PIXEL_BYTES;
            blend_selected_run(out, colour + at, alpha + at, marked + at, choose,
                               (x1 - x0) * PIXEL_BYTES);
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

/* Reads (dx, dy, width, height, colour, alpha[, marked or None]) tuples; NULL with an exception
 * set if any is malformed, so no pixel is touched for a bad call. */
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
    SelectTable select = {NULL, 0, 0, 0, 0};
    if (masked) {
        Py_ssize_t widest = 0;
        for (Py_ssize_t i = 0; i < piece_count; i++) {
            widest = pieces[i].width > widest ? pieces[i].width : widest;
        }
        if (!build_select(&mask, widest < right ? widest : right, &select)) {
            PyErr_NoMemory();
            release_pieces(pieces, piece_count);
            PyMem_Free(corners);
            PyBuffer_Release(&mask.cells);
            PyBuffer_Release(&canvas);
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t c = 0; c < corner_count; c++) {
        for (Py_ssize_t i = 0; i < piece_count; i++) {
            blend_piece(canvas.buf, stride, right, bottom, corners[2 * c], corners[2 * c + 1],
                        &pieces[i], masked ? &select : NULL);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(select.bytes);
    release_pieces(pieces, piece_count);
    PyMem_Free(corners);
    if (masked) {
        PyBuffer_Release(&mask.cells);
    }
    PyBuffer_Release(&canvas);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
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
    .m_name = "render.kernels._blend",
    .m_doc = "The watermark pattern's blend onto an RGBX canvas.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__blend(void)
{
    return PyModule_Create(&module);
}
