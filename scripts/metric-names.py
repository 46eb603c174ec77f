#!/usr/bin/env python3
"""Lists the metric names a Grafana dashboard or a Prometheus rule file uses.

Usage: scripts/metric-names.py FILE [--header LINE]...
  FILE: a Grafana dashboard (JSON) or Prometheus rule file (YAML).
Prints the sorted, unique metric names of every PromQL expression in FILE: the panels'
`expr`, the template variables' `query`/`definition` (dashboards) and the rules' `expr`
(rule files), each `--header` line first as a `# ` comment.

What counts as a metric name: an identifier in the expression that is not a function or
aggregation (followed by `(`), not a keyword (by, without, on, ignoring, group_left,
group_right, bool, and, or, unless, offset), not inside a label matcher `{...}`, a string, a
range `[...]` or the label list after by/without/on/ignoring/group_*, and not a Grafana
variable (`$name`, `${name}`). `label_values(m, label)` counts `m` only. A
`{__name__=~"..."}` selector names no metric here; bookie/tests/metric_names/mod.rs, which
applies the same rules to our own dashboard and alerts, checks it as a pattern.
"""
import json
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
            "and", "or", "unless", "offset", "inf", "nan", "atan2"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
LABEL_LIST = {"by", "without", "on", "ignoring", "group_left", "group_right"}
TOKEN = re.compile(r"""
    (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$\w+|\[\[\w+\]\])
  | (?P<num>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[a-zA-Z]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<open>[{\[(])
  | (?P<close>[}\])])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)


def names_in(expr):
    """The metric names of one PromQL expression."""
    label_values = re.match(r"\s*label_values\(\s*([^,()]*?)\s*(?:,|\))", expr)
    if label_values:
        expr = label_values.group(1)
    tokens = [(m.lastgroup, m.group()) for m in TOKEN.finditer(expr)]
    tokens = [t for t in tokens if not (t[0] == "other" and t[1].isspace())]
    found = set()
    depth_skip = []  # stack of open brackets; True where their content is skipped
    expect_label_list = False
    for i, (kind, text) in enumerate(tokens):
        skipping = any(depth_skip)
        if kind == "open":
            skip = text in "{[" or (text == "(" and expect_label_list)
            depth_skip.append(skip)
            expect_label_list = False
            continue
        if kind == "close":
            if depth_skip:
                depth_skip.pop()
            continue
        if skipping or kind != "ident":
            continue
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if text in LABEL_LIST:
            expect_label_list = True
            continue
        if nxt == "(" or text in KEYWORDS or text in AGGREGATIONS:
            continue
        found.add(text)
    return found


def expressions(doc):
    """Every PromQL expression in a dashboard or rule document."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "expr" and isinstance(value, str):
                yield value
            elif key in ("query", "definition") and isinstance(value, str) \
                    and doc.get("type", "query") == "query" and value != "prometheus":
                yield value
            else:
                yield from expressions(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from expressions(value)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    path, headers = argv[1], []
    rest = argv[2:]
    while rest:
        if rest[0] == "--header" and len(rest) > 1:
            headers.append(rest[1])
            rest = rest[2:]
        else:
            sys.exit(f"unknown argument {rest[0]!r}\n{__doc__}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith((".yml", ".yaml")):
        import yaml
        doc = yaml.safe_load(text)
    else:
        doc = json.loads(text)
    names = set()
    for expr in expressions(doc):
        names |= names_in(expr)
    for h in headers:
        print(f"# {h}")
    for n in sorted(names):
        print(n)


if __name__ == "__main__":
    main(sys.argv)
