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
#include <string.h>

#define PIXEL_BYTES 4

/* The per-pixel loops below are compiled twice where GCC can pick at run time (x86-64 Linux):
 * for AVX2, 32 bytes a vector, and for the baseline SSE2, 16. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define WIDE_VECTORS __attribute__((target_clones("avx2", "default")))
#else
#define WIDE_VECTORS
#endif

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
    if (mask->chip <= 0 || mask->chip > 4096 || mask->chips <= 0 || mask->chips > 4096 ||
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

/* The invisible mark's darkening (render/forensic/embed.py): every R, G, B byte on a set chip
 * of the mask loses round(value * strength / 255), which is what blending black at opacity
 * `strength` (`blend_run`) gives. With a strength of at most MAX_STRENGTH that is a count of
 * thresholds passed, in byte-wide compares: a quarter of the work of 16-bit products. */
#define MAX_STRENGTH 4

typedef struct {
    ChipMask mask;
    /* value > above[k] takes one level off; unused thresholds are 255 (never passed) */
    uint8_t above[MAX_STRENGTH];
} Darkening;

static inline uint8_t
darker(uint8_t value, const uint8_t *above, uint8_t select)
{
    /* Each test kept a byte wide (?: on bytes), so the compiler keeps 16 lanes a vector. */
    uint8_t levels = value > above[0] ? 1 : 0;
    levels = (uint8_t)(levels + (value > above[1] ? 1 : 0));
    levels = (uint8_t)(levels + (value > above[2] ? 1 : 0));
    levels = (uint8_t)(levels + (value > above[3] ? 1 : 0));
    return (uint8_t)(value - (levels & select));
}

/* Rows copied from a source into the canvas on the way (`darken` refuses overlapping ones). */
WIDE_VECTORS static void
darken_run(uint8_t *restrict out, const uint8_t *restrict in, const uint8_t *restrict select,
           const uint8_t *above, Py_ssize_t count)
{
    const uint8_t t[MAX_STRENGTH] = {above[0], above[1], above[2], above[3]};
    for (Py_ssize_t i = 0; i < count; i++) {
        out[i] = darker(in[i], t, select[i]);
    }
}

WIDE_VECTORS static void
darken_in_place(uint8_t *restrict bytes, const uint8_t *restrict select, const uint8_t *above,
                Py_ssize_t count)
{
    const uint8_t t[MAX_STRENGTH] = {above[0], above[1], above[2], above[3]};
    for (Py_ssize_t i = 0; i < count; i++) {
        bytes[i] = darker(bytes[i], t, select[i]);
    }
}

/* `select` for canvas row `y`: 0xFF on the bytes of set chips, 0 elsewhere, `per_pixel` bytes
 * a pixel (1 for grey, 4 for RGBX, whose X byte is never darkened). Cell by cell, with no
 * division per pixel: it runs every `chip` rows. */
static void
fill_select(uint8_t *select, const ChipMask *m, Py_ssize_t y, Py_ssize_t width, int per_pixel)
{
    const uint8_t *cells = m->cells.buf;
    const uint8_t *cell_row = cells + ((y / m->chip) % m->chips) * m->chips;
    Py_ssize_t x = 0, cell = 0;
    while (x < width) {
        uint8_t set = cell_row[cell] ? 0xFF : 0;
        Py_ssize_t end = x + m->chip < width ? x + m->chip : width;
        if (per_pixel == 4) {
            for (; x < end; x++) {
                select[4 * x] = select[4 * x + 1] = select[4 * x + 2] = set;
                select[4 * x + 3] = 0;
            }
        } else {
            memset(select + x, set, (size_t)(end - x));
            x = end;
        }
        cell = cell + 1 == m->chips ? 0 : cell + 1;
    }
}

/* The optional (mask, strength) pair of `darken` and `expand_grey`; 1 if read (or None). */
static int
read_darkening(PyObject *mask_object, int strength, Darkening *d, int *present)
{
    *present = mask_object != Py_None;
    memset(d->above, 255, sizeof d->above); /* nothing darkened without a mask */
    if (!*present) {
        return 1;
    }
    if (strength < 0 || strength > MAX_STRENGTH) {
        PyErr_SetString(PyExc_ValueError, "the strength must be 0-4");
        return 0;
    }
    if (!read_mask(mask_object, &d->mask)) {
        return 0;
    }
    /* round(v * s / 255) >= k exactly when v >= (2k - 1) * 255 / 2s, never a whole number */
    for (int k = 1; k <= MAX_STRENGTH; k++) {
        d->above[k - 1] = k <= strength ? (uint8_t)((2 * k - 1) * 255 / (2 * strength)) : 255;
    }
    return 1;
}

static PyObject *
darken(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer canvas, source = {0};
    Py_ssize_t stride, right, bottom;
    PyObject *mask_object, *source_object = Py_None;
    int strength, present;
    Darkening d;
    if (!PyArg_ParseTuple(args, "w*n(nn)Oi|O:darken", &canvas, &stride, &right, &bottom,
                          &mask_object, &strength, &source_object)) {
        return NULL;
    }
    if (right < 0 || bottom < 0 || stride < right * PIXEL_BYTES || canvas.len < stride * bottom) {
        PyBuffer_Release(&canvas);
        PyErr_SetString(PyExc_ValueError, "the area does not fit the canvas");
        return NULL;
    }
    if (mask_object == Py_None) {
        PyBuffer_Release(&canvas);
        PyErr_SetString(PyExc_TypeError, "the mask must be a tuple (cells, chip, chips)");
        return NULL;
    }
    if (!read_darkening(mask_object, strength, &d, &present)) {
        PyBuffer_Release(&canvas);
        return NULL;
    }
    if (source_object != Py_None) {
        if (PyObject_GetBuffer(source_object, &source, PyBUF_SIMPLE) < 0 ||
            source.len < stride * (bottom > 0 ? bottom - 1 : 0) + right * PIXEL_BYTES) {
            if (source.obj != NULL) {
                PyBuffer_Release(&source);
                PyErr_SetString(PyExc_ValueError, "the source rows do not fit the canvas");
            }
            PyBuffer_Release(&d.mask.cells);
            PyBuffer_Release(&canvas);
            return NULL;
        }
        const uint8_t *c = canvas.buf, *src = source.buf;
        if (src < c + canvas.len && c < src + source.len) {
            PyBuffer_Release(&source);
            PyBuffer_Release(&d.mask.cells);
            PyBuffer_Release(&canvas);
            PyErr_SetString(PyExc_ValueError, "the source overlaps the canvas (pass None)");
            return NULL;
        }
    }
    uint8_t *select = PyMem_Malloc(right > 0 ? right * PIXEL_BYTES : 1);
    if (select == NULL) {
        PyErr_NoMemory();
    } else {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t y = 0; y < bottom; y++) {
            if (y == 0 || y % d.mask.chip == 0) {
                fill_select(select, &d.mask, y, right, PIXEL_BYTES);
            }
            uint8_t *row = (uint8_t *)canvas.buf + y * stride;
            if (source.obj != NULL) {
                darken_run(row, (const uint8_t *)source.buf + y * stride, select, d.above,
                           right * PIXEL_BYTES);
            } else {
                darken_in_place(row, select, d.above, right * PIXEL_BYTES);
            }
        }
        Py_END_ALLOW_THREADS
        PyMem_Free(select);
    }
    if (source.obj != NULL) {
        PyBuffer_Release(&source);
    }
    PyBuffer_Release(&d.mask.cells);
    PyBuffer_Release(&canvas);
    if (select == NULL) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* One row of grey bytes as RGBX pixels: R = G = B = the grey, X = 255. */
WIDE_VECTORS static void
expand_row(uint8_t *restrict out, const uint8_t *restrict in, Py_ssize_t width)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* One 32-bit store a pixel (bytes R, G, B, X in memory): vectorised by the compiler. */
    uint32_t *restrict pixels = (uint32_t *)out;
    for (Py_ssize_t x = 0; x < width; x++) {
        pixels[x] = 0xFF000000u | (uint32_t)in[x] * 0x010101u;
    }
#else
    for (Py_ssize_t x = 0; x < width; x++, out += PIXEL_BYTES) {
        out[0] = out[1] = out[2] = in[x];
        out[3] = 255;
    }
#endif
}

/* The same, darkened where `select` is set (`darker`). */
WIDE_VECTORS static void
expand_row_darkened(uint8_t *restrict out, const uint8_t *restrict in,
                    const uint8_t *restrict select, const uint8_t *above, Py_ssize_t width)
{
    const uint8_t t[MAX_STRENGTH] = {above[0], above[1], above[2], above[3]};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t *restrict pixels = (uint32_t *)out;
    for (Py_ssize_t x = 0; x < width; x++) {
        pixels[x] = 0xFF000000u | (uint32_t)darker(in[x], t, select[x]) * 0x010101u;
    }
#else
    for (Py_ssize_t x = 0; x < width; x++, out += PIXEL_BYTES) {
        out[0] = out[1] = out[2] = darker(in[x], t, select[x]);
        out[3] = 255;
    }
#endif
}

/* A page kept as one grey byte a pixel (render/page_cache.py) back into the RGBX canvas:
 * R = G = B = the grey, X = 255. Pillow's L-to-RGBX paste took three times as long. With a
 * mask, the mark's darkening is applied on the way: this pass writes every pixel anyway, so
 * the mark costs no second pass over the page. */
static PyObject *
expand_grey(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer canvas, grey;
    Py_ssize_t stride, width, height;
    PyObject *mask_object = Py_None;
    int strength = 0, marked;
    Darkening d;
    if (!PyArg_ParseTuple(args, "w*ny*nn|Oi:expand_grey", &canvas, &stride, &grey, &width,
                          &height, &mask_object, &strength)) {
        return NULL;
    }
    if (width < 0 || height < 0 || stride < width * PIXEL_BYTES || canvas.len < stride * height
        || grey.len < width * height) {
        PyBuffer_Release(&canvas);
        PyBuffer_Release(&grey);
        PyErr_SetString(PyExc_ValueError, "the grey rows do not fit the canvas");
        return NULL;
    }
    if (!read_darkening(mask_object, strength, &d, &marked)) {
        PyBuffer_Release(&canvas);
        PyBuffer_Release(&grey);
        return NULL;
    }
    uint8_t *select = PyMem_Malloc(width > 0 ? width : 1);
    if (select == NULL) {
        if (marked) {
            PyBuffer_Release(&d.mask.cells);
        }
        PyBuffer_Release(&canvas);
        PyBuffer_Release(&grey);
        return PyErr_NoMemory();
    }
    const uint8_t *above = d.above;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t y = 0; y < height; y++) {
        if (marked && (y == 0 || y % d.mask.chip == 0)) {
            fill_select(select, &d.mask, y, width, 1);
        }
        const uint8_t *in = (const uint8_t *)grey.buf + y * width;
        uint8_t *out = (uint8_t *)canvas.buf + y * stride;
        if (marked) {
            expand_row_darkened(out, in, select, above, width);
        } else {
            expand_row(out, in, width);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(select);
    if (marked) {
        PyBuffer_Release(&d.mask.cells);
    }
    PyBuffer_Release(&canvas);
    PyBuffer_Release(&grey);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"darken", darken, METH_VARARGS,
     "darken(canvas, stride, (right, bottom), mask, strength, source=None)\n--\n\n"
     "Multiply the R, G, B bytes on the canvas's chips set in `mask` (cells, chip, chips)\n"
     "by (255 - strength) / 255, rounded, over its top-left `right` x `bottom` pixels; in\n"
     "place, or reading the rows from `source` (same stride) when given."},
    {"expand_grey", expand_grey, METH_VARARGS,
     "expand_grey(canvas, stride, grey, width, height, mask=None, strength=0)\n--\n\n"
     "Write `height` rows of `width` grey bytes into the RGBX `canvas` as R = G = B = grey,\n"
     "X = 255; with a mask, darkened on its set chips as `darken` does."},
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
