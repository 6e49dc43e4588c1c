"""Fixture hook: hand fill-in exercises fixed tables, no snippet engine.

Values are the lesson's (slides 23 and 47), typed here only because this
is a test fixture; the lesson's own tables come from snippet runs.
"""

import lessonbuild.exercises as exercises

TABLES = {
    "23_params.by_heads": {
        "columns": ["h", "d_k", "params (d=512)"],
        "rows": [
            ["1", "512", "1,048,576"],
            ["2", "256", "1,048,576"],
            ["4", "128", "1,048,576"],
            ["8", "64", "1,048,576"],
            ["16", "32", "1,048,576"],
        ],
    },
    "47_forward.shapes": {
        "columns": ["tensor", "expected shape", "actual shape"],
        "rows": [
            ["output", "(2, 5, 8)", "(2, 5, 8)"],
            ["attn_w", "(2, 2, 5, 5)", "(2, 2, 5, 5)"],
        ],
    },
}


def on_config(config):
    exercises.use_tables(TABLES)
    return config


def on_shutdown():
    exercises.use_tables(None)
