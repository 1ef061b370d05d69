"""A TextMate grammar for plan files (VS Code, Sublime Text, GitHub's highlighter, Shiki),
generated from the grammar's own terminals.

Contract: `textmate_grammar() -> dict` is the grammar as JSON-ready data, scope `source.plan`,
files `*.plan`: comments, strings (with their escapes and `{holes}`), money and numbers, the
constants `true`/`false`, and every keyword of the language, each pattern taken from the Lark
terminal that defines it (a keyword is a terminal whose pattern is a word). The committed copy,
`grammar/plan.tmLanguage.json`, is this output (`python -m planc.syntax.textmate`), and a test
keeps them equal, so an editor's highlighting cannot drift from the parser.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .parser import _parser

_CONSTANTS = {"TRUE", "FALSE"}


def textmate_grammar() -> dict[str, Any]:
    from lark.lexer import PatternStr

    terminals = {t.name: t.pattern for t in _parser().terminals}
    words = sorted({p.value for name, p in terminals.items()
                    if isinstance(p, PatternStr) and p.value.isalpha() and name not in _CONSTANTS})
    constants = sorted(terminals[name].value for name in _CONSTANTS)
    patterns = [
        {"name": "comment.line.number-sign.plan", "match": terminals["COMMENT"].value},
        {"name": "string.quoted.double.plan", "begin": '"', "end": '"|$',
         "patterns": [{"name": "constant.character.escape.plan", "match": r"\\."},
                      {"name": "variable.other.hole.plan", "match": r"\{[A-Za-z_][A-Za-z0-9_.]*(:%)?\}"}]},
        {"name": "constant.numeric.money.plan", "match": terminals["MONEY"].value},
        {"name": "constant.numeric.plan", "match": r"\b" + terminals["NUMBER"].value},
        {"name": "constant.language.plan", "match": r"\b(?:" + "|".join(constants) + r")\b"},
        {"name": "keyword.other.plan", "match": r"\b(?:" + "|".join(words) + r")\b"},
        {"name": "keyword.operator.plan", "match": r"->|\.\.|<=|>=|==|!=|[-+*/^<>=]"},
    ]
    return {
        "name": "plan",
        "scopeName": "source.plan",
        "fileTypes": ["plan"],
        "comment": "Generated from grammar/plan.lark by `python -m planc.syntax.textmate`; do not edit.",
        "patterns": patterns,
    }


def main() -> None:
    sys.stdout.write(json.dumps(textmate_grammar(), indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
