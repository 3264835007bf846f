/* _vid2context_captions: the classic timedtext parse of vid2context/providers/captions.py in C.

   Optional, like markupsafe's _speedups: the wheel carries it where a compiler was found at build
   time (hatch_build.py), and captions.py falls back to its pure-Python path where it is missing
   (the Worker, on Pyodide, never has it). It parses only what the Python fast path's usual shape
   parses, and gives the same segments for it: a document of <text start="s" dur="s">body</text>
   cues, times with at most three decimals, bodies whose every "&" starts one of the references or
   formatting tags that captions.py decodes in one pass (_BOTH_LAYERS_TOKEN). Anything else
   (another attribute order, a tag of another kind, a lone "&", a time JSON would read otherwise)
   returns None, and the Python code, which handles every document, takes it from the start: this
   module never has to be right about a case it does not accept. tests/test_captions_speedups.py
   compares the two on generated documents.

   Everything runs with the GIL held, on the str's own storage (no copy, no encoding). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Segment(start_sec=..., end_sec=..., text=...): the model is keyword-only. */
static PyObject *segment_kwnames;

/* 2**53 / 4, the fast path's limit on a time in ms (a start plus a duration stays exact). */
#define MAX_MS ((int64_t)1 << 51)
/* More integer digits than this is no caption time, and 10**15 ms already exceeds MAX_MS. */
#define MAX_INT_DIGITS 15

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Text;

static inline Py_UCS4
at(const Text *t, Py_ssize_t i)
{
    return PyUnicode_READ(t->kind, t->data, i);
}

/* Whether the ASCII literal `lit` (length len) is at i. */
static int
literal_at(const Text *t, Py_ssize_t i, const char *lit, Py_ssize_t len)
{
    if (len > t->length - i)
        return 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        if (at(t, i + k) != (Py_UCS4)(unsigned char)lit[k])
            return 0;
    }
    return 1;
}

#define LITERAL_AT(t, i, lit) literal_at((t), (i), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* The end of the run of [0-9.] from i. */
static Py_ssize_t
number_run(const Text *t, Py_ssize_t i)
{
    while (i < t->length) {
        Py_UCS4 c = at(t, i);
        if (!((c >= '0' && c <= '9') || c == '.'))
            break;
        i++;
    }
    return i;
}

/* A time in [from, to) as whole milliseconds, if it is (0|[1-9][0-9]*)(\.[0-9]{1,3})? and at
   most MAX_MS: what JSON reads exactly once "e3" is appended. -1 otherwise. */
static int64_t
milliseconds(const Text *t, Py_ssize_t from, Py_ssize_t to)
{
    Py_ssize_t i = from;
    int64_t whole = 0;
    int digits = 0;
    while (i < to && at(t, i) != '.') {
        Py_UCS4 c = at(t, i);
        if (c < '0' || c > '9' || digits == MAX_INT_DIGITS)
            return -1;
        if (digits == 1 && whole == 0)
            return -1; /* a leading zero: JSON has none */
        whole = whole * 10 + (int64_t)(c - '0');
        digits++;
        i++;
    }
    if (digits == 0)
        return -1;
    int64_t ms = whole * 1000;
    if (i < to) {
        i++; /* the "." */
        int64_t scale = 100;
        int decimals = 0;
        while (i < to) {
            Py_UCS4 c = at(t, i);
            if (c < '0' || c > '9' || decimals == 3)
                return -1;
            ms += (int64_t)(c - '0') * scale;
            scale /= 10;
            decimals++;
            i++;
        }
        if (decimals == 0)
            return -1;
    }
    return ms <= MAX_MS ? ms : -1;
}

/* The character at i, or 0 past the end (a document here holds no NUL: the caller refuses one). */
static inline Py_UCS4
char_at(const Text *t, Py_ssize_t i)
{
    return i < t->length ? at(t, i) : 0;
}

static inline int
ascii_letter(Py_UCS4 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The end of a quoted attribute value's text from i: [^&<>"\0]*. */
static Py_ssize_t
value_run(const Text *t, Py_ssize_t i)
{
    Py_UCS4 c;
    while ((c = char_at(t, i)) != 0 && c != '&' && c != '<' && c != '>' && c != '"')
        i++;
    return i;
}

/* The length after its "&" of the formatting tag at i (just after the "&", at "lt;"), or 0 when
   none is there. One of YouTube's tags as it stands in the XML, what captions.py's
   _FORMATTING_TOKEN matches: "&lt;", an optional "/", b, i, u or font in either case (ASCII: a
   dotless i, which Python's case folding also takes, is left to Python), attributes each a space,
   a name of ASCII letters, "=" and a value quoted by "&quot;" or '"' with no "&", "<", ">" or
   '"' inside, an optional "/", and "&gt;" or ">". The pattern can match only one way, so reading
   it from left to right without going back finds what the regex finds. */
static Py_ssize_t
formatting_tag(const Text *t, Py_ssize_t i)
{
    Py_ssize_t k = i + 3; /* "lt;" */
    if (char_at(t, k) == '/')
        k++;
    Py_UCS4 c = char_at(t, k) | 0x20; /* ASCII lower case (0 stays no letter) */
    if (c == 'b' || c == 'i' || c == 'u')
        k++;
    else if (c == 'f' && (char_at(t, k + 1) | 0x20) == 'o' && (char_at(t, k + 2) | 0x20) == 'n' &&
             (char_at(t, k + 3) | 0x20) == 't')
        k += 4;
    else
        return 0;
    while (char_at(t, k) == ' ') {
        k++;
        Py_ssize_t name = k;
        while (ascii_letter(char_at(t, k)))
            k++;
        if (k == name || char_at(t, k) != '=')
            return 0;
        k++;
        if (LITERAL_AT(t, k, "&quot;")) {
            k = value_run(t, k + 6);
            if (!LITERAL_AT(t, k, "&quot;"))
                return 0;
            k += 6;
        }
        else if (char_at(t, k) == '"') {
            k = value_run(t, k + 1);
            if (char_at(t, k) != '"')
                return 0;
            k++;
        }
        else
            return 0;
    }
    if (char_at(t, k) == '/')
        k++;
    if (LITERAL_AT(t, k, "&gt;"))
        k += 4;
    else if (char_at(t, k) == '>')
        k++;
    else
        return 0;
    return k - i;
}

/* The decoded character of the reference token at i (just after its "&"), and its length after
   the "&" in *len; 0 when no token starts there. Both layers at once: "&amp;lt;" is the XML
   "&amp;" then the HTML "&lt;", so "<". The tokens are captions.py's _REFERENCE_TOKENS. */
static Py_UCS4
reference(const Text *t, Py_ssize_t i, Py_ssize_t *len)
{
    Py_ssize_t start = i;
    int html = 0;
    if (LITERAL_AT(t, i, "amp;")) {
        html = 1;
        i += 4;
        if (LITERAL_AT(t, i, "amp;")) {
            *len = i + 4 - start;
            return '&';
        }
        if (LITERAL_AT(t, i, "lt;")) {
            *len = i + 3 - start;
            return '<';
        }
    }
    Py_UCS4 c = 0;
    Py_ssize_t n = 0;
    if (LITERAL_AT(t, i, "gt;"))
        c = '>', n = 3;
    else if (LITERAL_AT(t, i, "quot;"))
        c = '"', n = 5;
    else if (LITERAL_AT(t, i, "apos;"))
        c = '\'', n = 5;
    else if (LITERAL_AT(t, i, "#39;"))
        c = '\'', n = 4;
    else if (LITERAL_AT(t, i, "#x27;"))
        c = '\'', n = 5;
    else if (LITERAL_AT(t, i, "#10;"))
        c = '\n', n = 4;
    else if (!html && LITERAL_AT(t, i, "#34;"))
        c = '"', n = 4;
    else if (!html && LITERAL_AT(t, i, "#x22;"))
        c = '"', n = 5;
    else
        return 0;
    *len = i + n - start;
    return c;
}

/* One cue's text, [from, to) of the document: references decoded, runs of whitespace (what
   str.split() splits on) made one space, none at the ends; written to out (the document's kind,
   at least to - from long: decoding and collapsing only shorten). Its length, or -1 when the
   body holds an "&" this module does not decode. */
static Py_ssize_t
cue_text(const Text *t, Py_ssize_t from, Py_ssize_t to, void *out)
{
    Py_ssize_t n = 0;
    int space = 0;
    for (Py_ssize_t i = from; i < to; i++) {
        Py_UCS4 c = at(t, i);
        if (c == '&' && LITERAL_AT(t, i + 1, "lt;")) {
            Py_ssize_t len = formatting_tag(t, i + 1);
            if (len == 0)
                return -1; /* "&lt;" that is text, or a tag of another kind: Python decides */
            i += len;      /* the tag goes, and what is around it meets */
            continue;
        }
        if (c == '&') {
            Py_ssize_t len = 0;
            c = reference(t, i + 1, &len);
            if (c == 0)
                return -1;
            i += len;
        }
        if (Py_UNICODE_ISSPACE(c)) {
            space = n > 0;
            continue;
        }
        if (space) {
            PyUnicode_WRITE(t->kind, out, n, ' ');
            n++;
            space = 0;
        }
        PyUnicode_WRITE(t->kind, out, n, c);
        n++;
    }
    return n;
}

/* Append Segment(start_sec, end_sec, text) to segments; -1 with an exception set on failure. */
static int
append_segment(PyObject *segments, PyObject *segment, int64_t start, int64_t duration,
               PyObject *text)
{
    PyObject *args[3] = {NULL, NULL, text};
    args[0] = PyFloat_FromDouble((double)start / 1000.0);
    args[1] = PyFloat_FromDouble(((double)start + (double)duration) / 1000.0);
    int status = -1;
    if (args[0] != NULL && args[1] != NULL) {
        PyObject *made = PyObject_Vectorcall(segment, args, 0, segment_kwnames);
        if (made != NULL) {
            status = PyList_Append(segments, made);
            Py_DECREF(made);
        }
    }
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return status;
}

/* Where the cue that starts at i (a "<") ends, with its parts' bounds; 0 when none starts there. */
typedef struct {
    Py_ssize_t start_from, start_to, dur_from, dur_to, body_from, body_to, end;
} Cue;

static int
usual_cue(const Text *t, Py_ssize_t i, Cue *cue)
{
    if (!LITERAL_AT(t, i, "<text start=\""))
        return 0;
    cue->start_from = i + 13;
    cue->start_to = number_run(t, cue->start_from);
    if (cue->start_to == cue->start_from || !LITERAL_AT(t, cue->start_to, "\" dur=\""))
        return 0;
    cue->dur_from = cue->start_to + 7;
    cue->dur_to = number_run(t, cue->dur_from);
    if (cue->dur_to == cue->dur_from || !LITERAL_AT(t, cue->dur_to, "\">"))
        return 0;
    cue->body_from = cue->dur_to + 2;
    Py_ssize_t j = cue->body_from;
    while (j < t->length && at(t, j) != '<')
        j++;
    if (!LITERAL_AT(t, j, "</text>"))
        return 0;
    cue->body_to = j;
    cue->end = j + 7;
    return 1;
}

static PyObject *
classic(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "classic(text: str, segment: type)");
        return NULL;
    }
    PyObject *document = args[0], *segment = args[1];
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(document) < 0) /* a legacy string of 3.11's deprecated APIs */
        return NULL;
#endif
    Text t = {PyUnicode_KIND(document), PyUnicode_DATA(document), PyUnicode_GET_LENGTH(document)};
    PyObject *segments = PyList_New(0);
    if (segments == NULL)
        return NULL;
    void *out = NULL;
    Py_ssize_t out_size = 0;
    Py_ssize_t i = 0;
    while (i < t.length) {
        if (at(&t, i) != '<') {
            i++;
            continue;
        }
        Cue cue;
        if (!usual_cue(&t, i, &cue)) {
            /* A "<p" or "<text" that is not a usual cue may be a cue of another shape. */
            if (LITERAL_AT(&t, i, "<p") || LITERAL_AT(&t, i, "<text"))
                goto other_shape;
            i++;
            continue;
        }
        int64_t start = milliseconds(&t, cue.start_from, cue.start_to);
        int64_t duration = milliseconds(&t, cue.dur_from, cue.dur_to);
        if (start < 0 || duration < 0)
            goto other_shape;
        Py_ssize_t size = (cue.body_to - cue.body_from) * t.kind;
        if (size > out_size) {
            void *grown = PyMem_Realloc(out, (size_t)size);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            out = grown;
            out_size = size;
        }
        Py_ssize_t n = cue_text(&t, cue.body_from, cue.body_to, out);
        if (n < 0)
            goto other_shape;
        if (n > 0) {
            PyObject *text = PyUnicode_FromKindAndData(t.kind, out, n);
            if (text == NULL)
                goto error;
            int status = append_segment(segments, segment, start, duration, text);
            Py_DECREF(text);
            if (status < 0)
                goto error;
        }
        i = cue.end;
    }
    PyMem_Free(out);
    return segments;
other_shape:
    PyMem_Free(out);
    Py_DECREF(segments);
    Py_RETURN_NONE;
error:
    PyMem_Free(out);
    Py_DECREF(segments);
    return NULL;
}

static PyMethodDef methods[] = {
    {"classic", (PyCFunction)(void (*)(void))classic, METH_FASTCALL,
     "classic(text, segment) -> list | None\n\n"
     "The segments of a classic timedtext document in the usual shape, made by calling "
     "segment(start_sec=, end_sec=, text=); None when the document is in any other shape."},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    (void)module;
    if (segment_kwnames == NULL) /* shared by every instance of the module, never freed */
        segment_kwnames = Py_BuildValue("(sss)", "start_sec", "end_sec", "text");
    return segment_kwnames == NULL ? -1 : 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#ifdef Py_GIL_DISABLED
    /* It reads an immutable str and writes only what it allocates. */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_vid2context_captions",
    .m_doc = "The classic timedtext parse of vid2context.providers.captions, in C (optional).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__vid2context_captions(void)
{
    return PyModuleDef_Init(&module_def);
}
