//! Metric names for `ops_metric_coverage.rs`: the names a PromQL expression uses (the same
//! rules as `scripts/metric-names.py`, which made the committed lists under
//! `deploy/metric-names/`), the expressions of a Grafana dashboard and of a Prometheus rule
//! file, the committed name lists, and the samples of a Prometheus text exposition.
//!
//! A metric name is an identifier that is not a function or aggregation (followed by `(`), not
//! a keyword, not inside a label matcher `{...}`, a string, a range `[...]` or the label list
//! after `by`/`without`/`on`/`ignoring`/`group_*`, and not a Grafana variable. A selector by
//! `{__name__=~"prefix.+suffix"}` is kept as a *pattern* (only that form is understood; any
//! other `__name__` matcher is an error, so nothing is silently unchecked).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "atan2",
];
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

#[derive(Debug, PartialEq)]
enum Tok {
    Str(String),
    Ident(String),
    Open(char),
    Close,
    Other,
}

fn tokens(expr: &str) -> Vec<Tok> {
    let c: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '"' || ch == '\'' || ch == '`' {
            let mut s = String::new();
            i += 1;
            while i < c.len() && c[i] != ch {
                if c[i] == '\\' && ch != '`' && i + 1 < c.len() {
                    i += 1;
                }
                s.push(c[i]);
                i += 1;
            }
            i += 1;
            out.push(Tok::Str(s));
        } else if ch == '$' {
            // Grafana variable: $name or ${name}
            i += 1;
            if i < c.len() && c[i] == '{' {
                while i < c.len() && c[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
            out.push(Tok::Other);
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                i += 1;
            }
            out.push(Tok::Other);
        } else if ch.is_ascii_alphabetic() || ch == '_' || ch == ':' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_' || c[i] == ':') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch == '{' || ch == '[' || ch == '(' {
            out.push(Tok::Open(ch));
            i += 1;
        } else if ch == '}' || ch == ']' || ch == ')' {
            out.push(Tok::Close);
            i += 1;
        } else {
            if !ch.is_whitespace() {
                out.push(Tok::Other);
            }
            i += 1;
        }
    }
    out
}

/// Names and `__name__` patterns used by one expression.
#[derive(Debug, Default, Clone)]
pub struct Used {
    pub names: BTreeSet<String>,
    /// `(prefix, suffix)` of `{__name__=~"prefix.+suffix"}` selectors.
    pub patterns: BTreeSet<(String, String)>,
}

impl Used {
    pub fn extend(&mut self, other: Used) {
        self.names.extend(other.names);
        self.patterns.extend(other.patterns);
    }
}

fn name_pattern(regex: &str) -> (String, String) {
    for wild in [".+", ".*"] {
        if let Some((p, s)) = regex.split_once(wild) {
            let plain = |x: &str| x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if plain(p) && plain(s) && !p.is_empty() {
                return (p.to_string(), s.to_string());
            }
        }
    }
    panic!("__name__ matcher {regex:?}: only \"prefix.+suffix\" is understood");
}

/// The metric names (and `__name__` patterns) of one PromQL expression.
pub fn promql_names(expr: &str) -> Used {
    let mut expr = expr.trim().to_string();
    if let Some(rest) = expr.strip_prefix("label_values(") {
        // label_values(metric{...}, label) or label_values(label): the metric only.
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' | '(' => depth += 1,
                    '}' | ')' if depth > 0 => depth -= 1,
                    ',' | ')' if depth == 0 => return true,
                    _ => {}
                }
                false
            })
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let first = rest[..end].trim();
        let has_comma = rest[end..].starts_with(',');
        expr = if has_comma {
            first.to_string()
        } else {
            String::new()
        };
    }
    let toks = tokens(&expr);
    let mut used = Used::default();
    let mut stack: Vec<(char, bool)> = Vec::new();
    let mut expect_label_list = false;
    for (i, t) in toks.iter().enumerate() {
        let skipping = stack.iter().any(|&(_, s)| s);
        match t {
            Tok::Open(c) => {
                let skip = *c == '{' || *c == '[' || (*c == '(' && expect_label_list);
                stack.push((*c, skip));
                expect_label_list = false;
            }
            Tok::Close => {
                stack.pop();
            }
            // A label matcher (skipped below): only `__name__` matters.
            Tok::Ident(id) if id == "__name__" && stack.last().is_some_and(|&(c, _)| c == '{') => {
                let regex = toks[i + 1..].iter().find_map(|t| match t {
                    Tok::Str(s) => Some(s.clone()),
                    _ => None,
                });
                used.patterns
                    .insert(name_pattern(&regex.expect("__name__ value")));
            }
            Tok::Ident(id) if !skipping => {
                let next_is_call = matches!(toks.get(i + 1), Some(Tok::Open('(')));
                if LABEL_LISTS.contains(&id.as_str()) {
                    expect_label_list = true;
                } else if !next_is_call
                    && !KEYWORDS.contains(&id.as_str())
                    && !AGGREGATIONS.contains(&id.as_str())
                {
                    used.names.insert(id.clone());
                }
            }
            _ => {}
        }
    }
    used
}

/// Every PromQL expression of a Grafana dashboard: panel targets' `expr` and the query
/// variables' `query`/`definition` strings.
pub fn dashboard_exprs(doc: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                let is_query_var = m
                    .get("type")
                    .and_then(|t| t.as_str())
                    .is_none_or(|t| t == "query");
                for (k, v) in m {
                    match (k.as_str(), v.as_str()) {
                        ("expr", Some(s)) => out.push(s.to_string()),
                        ("query" | "definition", Some(s)) if is_query_var && s != "prometheus" => {
                            out.push(s.to_string())
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(doc, &mut out);
    out
}

/// The `expr` of every rule of a Prometheus rule file written as deploy/prometheus's is: one
/// `expr:` line per rule, plain or single-quoted. Checks the structure on the way: `groups:`,
/// each group named with `rules:`, each rule an `alert:` with `expr:`, `for:`,
/// `labels: severity:` and `annotations: summary:` / `description:`.
pub fn alert_exprs(text: &str) -> Vec<(String, String)> {
    assert!(
        text.lines()
            .any(|l| l.trim_end() == "groups:" && !l.starts_with(' ')),
        "a rule file starts with `groups:`"
    );
    let mut rules: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    let mut groups = 0;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if let Some(name) = t.strip_prefix("- name:") {
            assert!(!name.trim().is_empty(), "group without a name");
            groups += 1;
            continue;
        }
        if let Some(name) = t.strip_prefix("- alert:") {
            assert!(groups > 0, "rule {name} outside a group");
            rules.push((name.trim().to_string(), BTreeMap::new()));
            continue;
        }
        if let Some((k, v)) = t.split_once(':') {
            if let Some((_, fields)) = rules.last_mut() {
                fields.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    assert!(groups > 0 && !rules.is_empty(), "no groups or rules");
    let mut out = Vec::new();
    for (name, f) in rules {
        for key in ["expr", "for", "severity", "summary", "description"] {
            assert!(
                f.get(key).is_some_and(|v| !v.is_empty()),
                "rule {name}: no {key}"
            );
        }
        assert!(
            ["critical", "warning", "info"].contains(&f["severity"].as_str()),
            "rule {name}: severity {}",
            f["severity"]
        );
        let mut expr = f["expr"].clone();
        if expr.starts_with('\'') {
            assert!(
                expr.ends_with('\'') && expr.len() >= 2,
                "rule {name}: quote"
            );
            expr = expr[1..expr.len() - 1].replace("''", "'");
        }
        assert!(
            !expr.starts_with('|') && !expr.starts_with('>') && !expr.starts_with('"'),
            "rule {name}: write expr on one line, plain or single-quoted"
        );
        out.push((name, expr));
    }
    out
}

/// A committed name list: one name a line, `#` comments.
pub fn read_list(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Per sample name of a Prometheus text exposition: whether any sample is non-zero (NaN counts
/// as zero).
pub fn samples(text: &str) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..end];
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        let nonzero = !value.is_nan() && value != 0.0;
        *out.entry(name.to_string()).or_default() |= nonzero;
    }
    out
}

/// The names of `exported` a pattern stands for.
pub fn matching<'a>(
    exported: &'a BTreeMap<String, bool>,
    (prefix, suffix): &(String, String),
) -> Vec<&'a String> {
    exported
        .keys()
        .filter(|n| n.len() > prefix.len() + suffix.len())
        .filter(|n| n.starts_with(prefix.as_str()) && n.ends_with(suffix.as_str()))
        .collect()
}

#[test]
fn promql_names_follow_the_rules() {
    let u = promql_names(
        r#"sum by (instance, success) (rate(bookkeeper_server_ADD_ENTRY_REQUEST_count{job=~"$job", success="true"}[$__rate_interval])) / ignoring(x) group_left(y) other_metric offset 5m or vector(0)"#,
    );
    assert_eq!(
        u.names.iter().cloned().collect::<Vec<_>>(),
        ["bookkeeper_server_ADD_ENTRY_REQUEST_count", "other_metric"]
    );
    let u = promql_names(r#"{__name__=~"bookie_ledger_dir_.+_usage", job="a"} > 70"#);
    assert!(u.names.is_empty());
    assert_eq!(
        u.patterns.into_iter().collect::<Vec<_>>(),
        [("bookie_ledger_dir_".to_string(), "_usage".to_string())]
    );
    let u = promql_names(r#"100 * (1 - a_bytes{m=~"x"} / b_bytes) > 0.5e3"#);
    assert_eq!(
        u.names.into_iter().collect::<Vec<_>>(),
        ["a_bytes", "b_bytes"]
    );
    let u = promql_names(r#"label_values(bookie_SERVER_STATUS{job=~"$job"}, instance)"#);
    assert_eq!(
        u.names.into_iter().collect::<Vec<_>>(),
        ["bookie_SERVER_STATUS"]
    );
    assert!(promql_names("label_values(job)").names.is_empty());
    let s = samples("# TYPE a summary\na{q=\"0.5\"} NaN\na_count 3\nb 0\nc{x=\"1 2\"} 0.5\n");
    assert_eq!(
        s.into_iter().collect::<Vec<_>>(),
        [
            ("a".to_string(), false),
            ("a_count".to_string(), true),
            ("b".to_string(), false),
            ("c".to_string(), true)
        ]
    );
}
