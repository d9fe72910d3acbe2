/* The invisible mark on the paper (render/forensic/embed.py), and a kept page's copy back into
 * the canvas (render/page/canvas.py), which applies the mark on the way: both passes over every
 * pixel, in loops the compiler vectorises, with the GIL released.
 */
#include "_chipmask.h"

/* The invisible mark's darkening (render/forensic/embed.py): every R, G, B byte on a set chip
 * of the mask loses round(value * strength / 255), which is what blending black at opacity
 * `strength` gives (`blend_run` in _blend.c, and Pillow's paste). With a strength of at most
 * MAX_STRENGTH that is a count of thresholds passed: byte-wide compares, 16 lanes to a
 * vector, where the products would need 16-bit lanes. */
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

/* A page kept as one grey byte a pixel (render/worker/page_cache.py) back into the RGBX canvas:
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "render.kernels._paper",
    .m_doc = "The invisible mark's darkening of the paper, and a grey page's copy back.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__paper(void)
{
    return PyModule_Create(&module);
}
