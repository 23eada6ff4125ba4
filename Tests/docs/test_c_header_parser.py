"""The C reference's reader of include/loadstate.h (docs/_ext/c_header.py)
on a small header of every shape the real one uses."""

import sys

from docsite import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import c_header  # noqa: E402

HEADER = """/*
 * demo.h — a header.
 *
 * OVERVIEW
 *
 *   Cells hold a state.
 *
 *     absent -> loaded
 *
 * THREADING (every function)
 *
 *   - Any thread, including
 *     callbacks.
 *   - No waits.
 */
#ifndef DEMO_H
#define DEMO_H

/* ------------------------------------------------------------------ */
/* First group                                                         */
/* ------------------------------------------------------------------ */

#define LDS_OK 0
#define LDS_EINVAL (-1)  /* an argument is invalid: NULL pointer,
                            bad size */

/* Flags of a load (lds_demo_options.flags). */
#define LDS_LOAD_SILENT (1u << 0)  /* keep the state */
#define LDS_LOAD_SHARE  (1u << 1)

/* The largest value. */
#define LDS_VALUE_MAX ((size_t)256 * 1024 * 1024)

typedef uint64_t lds_id;
typedef struct lds_runtime lds_runtime;

/*
 * A note that belongs to no declaration.
 *
 *   what     limit
 *   -------  -----
 *   a value  LDS_VALUE_MAX
 */

/* ------------------------------------------------------------------ */
/* Second group                                                        */
/* ------------------------------------------------------------------ */

/* Options. Initialize with LDS_DEMO_INIT. */
typedef struct lds_demo_options {
  uint32_t size;      /* sizeof(lds_demo_options) */
  /* Since 0.2. Flags: LDS_LOAD_*. */
  uint32_t flags;
  void (*free_data)(void *data);  /* may be NULL; runs once,
                                   *      on the loop */
  lds_id ids[4];
} lds_demo_options;

#define LDS_DEMO_INIT { sizeof(lds_demo_options), 0, \\
                        NULL }

/* Called with each event. */
typedef void (*lds_event_fn)(const void *event, void *user_data);

/*
 * Loads: see lds_demo_free(rt) and lds_demo_options.flags.
 *
 *   rt    the runtime
 */
int lds_demo_load(lds_runtime *rt, lds_id cell,
                  const lds_demo_options *opts);
int lds_demo_free(lds_runtime *rt);

#endif /* DEMO_H */
"""


def parsed():
    return c_header.parse_header(HEADER)


def test_groups_in_header_order():
    header = parsed()
    assert [s.title for s in header.sections] == ["First group", "Second group"]
    assert header.overview.startswith("demo.h — a header.")


def test_macros_their_values_and_comments():
    first = parsed().sections[0].items
    macros = {item.name: item for item in first if isinstance(item, c_header.Macro)}
    assert macros["LDS_OK"].value == "0" and macros["LDS_OK"].doc == ""
    assert macros["LDS_EINVAL"].doc == "an argument is invalid: NULL pointer, bad size"
    assert macros["LDS_VALUE_MAX"].doc == "The largest value."
    assert macros["LDS_LOAD_SILENT"].doc == "keep the state"
    # A comment before several defines introduces the group: prose before them.
    index = [i for i, item in enumerate(first) if getattr(item, "name", None) == "LDS_LOAD_SILENT"][0]
    assert first[index - 1] == c_header.Prose("Flags of a load (lds_demo_options.flags).")
    init = [i for i in parsed().sections[1].items if getattr(i, "name", None) == "LDS_DEMO_INIT"][0]
    assert init.value == "{ sizeof(lds_demo_options), 0, NULL }"


def test_types_structs_and_functions():
    second = parsed().sections[1].items
    struct = second[0]
    assert isinstance(struct, c_header.Struct) and struct.doc == "Options. Initialize with LDS_DEMO_INIT."
    assert [(m.name, m.declaration, m.doc) for m in struct.members] == [
        ("size", "uint32_t size", "sizeof(lds_demo_options)"),
        ("flags", "uint32_t flags", "Since 0.2. Flags: LDS_LOAD_*."),
        ("free_data", "void (*free_data)(void *data)", "may be NULL; runs once, on the loop"),
        ("ids", "lds_id ids[4]", ""),
    ]
    kinds = parsed().names()
    assert kinds["lds_id"] == "type" and kinds["lds_event_fn"] == "type"
    assert kinds["lds_runtime"] == "struct" and kinds["lds_demo_options.free_data"] == "member"
    load = [i for i in second if getattr(i, "name", None) == "lds_demo_load"][0]
    assert load.declaration == "int lds_demo_load(lds_runtime *rt, lds_id cell, const lds_demo_options *opts)"
    free = [i for i in second if getattr(i, "name", None) == "lds_demo_free"][0]
    assert free.doc == ""


def test_rendering():
    rst = c_header.Renderer(parsed()).render()
    assert "First group\n===========\n" in rst and "Second group\n============\n" in rst
    assert rst.index("First group") < rst.index("Second group")
    assert ".. c:function:: int lds_demo_load(lds_runtime *rt, lds_id cell, const lds_demo_options *opts)" in rst
    assert ".. c:type:: void (*lds_event_fn)(const void *event, void *user_data)" in rst
    assert "   .. c:member:: void (*free_data)(void *data)" in rst
    # Names link to their entries; a call written with its arguments keeps them outside the link.
    assert r"see \ :c:func:`lds_demo_free <lds_demo_free>`\ (rt) and \ :c:member:`lds_demo_options.flags`\ ." in rst
    # Markup characters of the text are escaped.
    assert r"Flags: LDS\_LOAD\_\*." in rst
    # Tables stay preformatted; bulleted lists become lists; headings rubrics.
    assert ".. code-block:: text\n\n     what     limit\n     -------  -----\n     a value  LDS_VALUE_MAX" in rst
    assert ".. rubric:: Threading (every function)\n\n- Any thread, including\n  callbacks.\n- No waits." in rst
    assert ".. code-block:: text\n\n        rt    the runtime" in rst
