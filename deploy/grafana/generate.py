#!/usr/bin/env python3
"""Writes deploy/grafana/bookie-rs.json, the Grafana dashboard bookie-rs ships (deploy/README.md).

Edit the panel list below and rerun `python3 deploy/grafana/generate.py`; commit both files.
Metric names: the stock Java bookie's wherever one exists, so the same dashboard shows Java and
bookie-rs bookies side by side; `bookie_rs_*` for what only bookie-rs has; `process_*` from the
process collector; `node_filesystem_*` from node_exporter (journal disks: the bookie has no
stock journal-dir usage gauge); `up` from Prometheus itself.
bookie/tests/ops_metric_coverage.rs checks every name used here is exported under load.
"""
import json
import os

SEL = 'job=~"$job", instance=~"$instance"'
RATE = "$__rate_interval"


def q(expr, legend):
    return {"expr": expr, "legendFormat": legend}


PANELS = [
    ("row", "Overview"),
    ("stat", "Bookies up", "", [q(f'sum(up{{{SEL}}})', "up")]),
    ("stat", "Writable", "", [q(f'count(bookie_SERVER_STATUS{{{SEL}}} == 1) or vector(0)', "writable")]),
    ("stat", "Read-only", "", [q(f'count(bookie_SERVER_STATUS{{{SEL}}} == 0) or vector(0)', "read-only")]),
    ("stat", "Unregistered", "", [q(f'count(bookie_SERVER_STATUS{{{SEL}}} == -1) or vector(0)', "unregistered")]),
    ("row", "Requests"),
    ("timeseries", "Add entry rate", "ops", [
        q(f'sum by (instance, success) (rate(bookkeeper_server_ADD_ENTRY_REQUEST_count{{{SEL}}}[{RATE}]))',
          "{{instance}} success={{success}}")]),
    ("timeseries", "Read entry rate", "ops", [
        q(f'sum by (instance, success) (rate(bookkeeper_server_READ_ENTRY_REQUEST_count{{{SEL}}}[{RATE}]))',
          "{{instance}} success={{success}}")]),
    ("timeseries", "Add entry latency (request, success)", "ms", [
        q(f'max by (instance, quantile) (bookkeeper_server_ADD_ENTRY_REQUEST{{{SEL}, success="true", quantile=~"0.5|0.99|0.999"}})',
          "{{instance}} p{{quantile}}")]),
    ("timeseries", "Read entry latency (request, success)", "ms", [
        q(f'max by (instance, quantile) (bookkeeper_server_READ_ENTRY_REQUEST{{{SEL}, success="true", quantile=~"0.5|0.99|0.999"}})',
          "{{instance}} p{{quantile}}")]),
    ("timeseries", "Add entry processing latency p99", "ms", [
        q(f'max by (instance) (bookkeeper_server_ADD_ENTRY{{{SEL}, success="true", quantile="0.99"}})', "{{instance}} add"),
        q(f'max by (instance) (bookkeeper_server_READ_ENTRY{{{SEL}, success="true", quantile="0.99"}})', "{{instance}} read")]),
    ("timeseries", "Throughput", "Bps", [
        q(f'sum by (instance) (rate(bookie_WRITE_BYTES{{{SEL}}}[{RATE}]))', "{{instance}} write"),
        q(f'sum by (instance) (rate(bookie_READ_BYTES{{{SEL}}}[{RATE}]))', "{{instance}} read")]),
    ("timeseries", "Requests in progress and blocked", "short", [
        q(f'bookkeeper_server_ADD_ENTRY_IN_PROGRESS{{{SEL}}}', "{{instance}} adds in progress"),
        q(f'bookkeeper_server_READ_ENTRY_IN_PROGRESS{{{SEL}}}', "{{instance}} reads in progress"),
        q(f'bookkeeper_server_ADD_ENTRY_BLOCKED{{{SEL}}}', "{{instance}} adds blocked"),
        q(f'bookkeeper_server_READ_ENTRY_BLOCKED{{{SEL}}}', "{{instance}} reads blocked")]),
    ("timeseries", "Rejected requests", "ops", [
        q(f'rate(bookkeeper_server_ADD_ENTRY_REJECTED{{{SEL}}}[{RATE}])', "{{instance}} adds"),
        q(f'rate(bookkeeper_server_READ_ENTRY_REJECTED{{{SEL}}}[{RATE}])', "{{instance}} reads")]),
    ("timeseries", "Client connections", "short", [
        q(f'bookie_rs_connections{{{SEL}}}', "{{instance}}")]),
    ("row", "Journal"),
    ("timeseries", "Journal fsync latency", "ms", [
        q(f'max by (instance, quantile) (bookie_journal_JOURNAL_SYNC{{{SEL}, success="true", quantile=~"0.5|0.99|1.0"}})',
          "{{instance}} p{{quantile}}")]),
    ("timeseries", "Journal fsync rate", "ops", [
        q(f'sum by (instance) (rate(bookie_journal_JOURNAL_SYNC_count{{{SEL}, success="true"}}[{RATE}]))', "{{instance}}")]),
    ("timeseries", "Journal add latency", "ms", [
        q(f'max by (instance, quantile) (bookie_journal_JOURNAL_ADD_ENTRY{{{SEL}, success="true", quantile=~"0.5|0.99"}})',
          "{{instance}} p{{quantile}}")]),
    ("timeseries", "Journal queues", "short", [
        q(f'sum by (instance) (bookie_journal_JOURNAL_QUEUE_SIZE{{{SEL}}})', "{{instance}} journal queue"),
        q(f'sum by (instance) (bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE{{{SEL}}})', "{{instance}} force-write queue")]),
    ("timeseries", "Journal write throughput", "Bps", [
        q(f'sum by (instance) (rate(bookie_journal_JOURNAL_WRITE_BYTES{{{SEL}}}[{RATE}]))', "{{instance}}")]),
    ("timeseries", "Entries per journal fsync (p99)", "short", [
        q(f'max by (instance) (bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES{{{SEL}, success="true", quantile="0.99"}})', "{{instance}}")]),
    ("row", "Storage and caches"),
    ("timeseries", "Write cache", "bytes", [
        q(f'bookie_write_cache_size{{{SEL}}}', "{{instance}} used"),
        q(f'bookie_write_cache_max_size{{{SEL}}}', "{{instance}} max")]),
    ("timeseries", "Read cache", "bytes", [
        q(f'bookie_read_cache_size{{{SEL}}}', "{{instance}} used")]),
    ("timeseries", "Read cache hit ratio", "percentunit", [
        q(f'sum by (instance) (rate(bookie_read_cache_hits{{{SEL}}}[{RATE}])) / '
          f'(sum by (instance) (rate(bookie_read_cache_hits{{{SEL}}}[{RATE}])) + sum by (instance) (rate(bookie_read_cache_misses{{{SEL}}}[{RATE}])))',
          "{{instance}}")]),
    ("timeseries", "Ledgers and entries", "short", [
        q(f'bookie_ledgers_count{{{SEL}}}', "{{instance}} ledgers"),
        q(f'bookie_entries_count{{{SEL}}}', "{{instance}} entries")]),
    ("timeseries", "Storage flush latency p99", "ms", [
        q(f'max by (instance) (bookie_flush{{{SEL}, success="true", quantile="0.99"}})', "{{instance}}")]),
    ("timeseries", "Garbage collection and compaction", "short", [
        q(f'increase(bookie_DELETED_LEDGER_TOTAL{{{SEL}}}[1h])', "{{instance}} ledgers deleted / h"),
        q(f'increase(bookie_MAJOR_COMPACTION_TOTAL{{{SEL}}}[1h])', "{{instance}} major compactions / h"),
        q(f'increase(bookie_MINOR_COMPACTION_TOTAL{{{SEL}}}[1h])', "{{instance}} minor compactions / h")]),
    ("timeseries", "Space reclaimed", "Bps", [
        q(f'rate(bookie_RECLAIMED_DELETION_SPACE_BYTES{{{SEL}}}[{RATE}])', "{{instance}} by deletion"),
        q(f'rate(bookie_RECLAIMED_COMPACTION_SPACE_BYTES{{{SEL}}}[{RATE}])', "{{instance}} by compaction")]),
    ("row", "Disks"),
    ("timeseries", "Ledger directory usage", "percent", [
        q(f'{{__name__=~"bookie_ledger_dir_.+_usage", {SEL}}}', "{{instance}} {{__name__}}")], 70, 85),
    ("timeseries", "Journal file system usage (node_exporter)", "percent", [
        q(f'100 * (1 - node_filesystem_avail_bytes{{{SEL}, mountpoint=~"$journal_mount"}} / node_filesystem_size_bytes{{{SEL}, mountpoint=~"$journal_mount"}})',
          "{{instance}} {{mountpoint}}")], 70, 85),
    ("timeseries", "Writable ledger directories", "short", [
        q(f'bookie_ledger_writable_dirs{{{SEL}}}', "{{instance}}")]),
    ("row", "Memory and process"),
    ("timeseries", "Memory bound and use (bookie-rs)", "bytes", [
        q(f'bookie_rs_memory_bound_bytes{{{SEL}}}', "{{instance}} bound"),
        q(f'sum by (instance) (bookie_rs_memory_part_used_bytes{{{SEL}}})', "{{instance}} parts used"),
        q(f'process_resident_memory_bytes{{{SEL}}}', "{{instance}} RSS"),
        q(f'bookie_rs_memory_peak_rss_bytes{{{SEL}}}', "{{instance}} peak RSS")]),
    ("timeseries", "Memory parts (bookie-rs)", "bytes", [
        q(f'bookie_rs_memory_part_used_bytes{{{SEL}}}', "{{instance}} {{part}} used"),
        q(f'bookie_rs_memory_part_bound_bytes{{{SEL}}}', "{{instance}} {{part}} bound")]),
    ("timeseries", "Process CPU", "percentunit", [
        q(f'rate(process_cpu_seconds_total{{{SEL}}}[{RATE}])', "{{instance}}")]),
    ("timeseries", "Open file descriptors", "short", [
        q(f'process_open_fds{{{SEL}}}', "{{instance}} open"),
        q(f'process_max_fds{{{SEL}}}', "{{instance}} max")]),
]


def build():
    panels, y, x, pid = [], 0, 0, 1
    for p in PANELS:
        if p[0] == "row":
            if x:
                y, x = y + 8, 0
            panels.append({"type": "row", "title": p[1], "id": pid, "collapsed": False,
                           "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
            pid, y = pid + 1, y + 1
            continue
        kind, title, unit, targets = p[0], p[1], p[2], p[3]
        w, h = (6, 4) if kind == "stat" else (12, 8)
        if x + w > 24:
            y, x = y + 8, 0
        panel = {
            "type": kind, "title": title, "id": pid,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": h, "w": w, "x": x, "y": y},
            "targets": [dict(t, refId=chr(ord("A") + i)) for i, t in enumerate(targets)],
            "fieldConfig": {"defaults": {"unit": unit or "short"}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        }
        if len(p) > 4:
            panel["fieldConfig"]["defaults"]["thresholds"] = {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": p[4]},
                {"color": "red", "value": p[5]}]}
            panel["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}
        panels.append(panel)
        pid += 1
        x += w
        if x >= 24:
            y, x = y + h, 0
    variables = [
        {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus"},
        {"type": "query", "name": "job", "label": "Job", "multi": True, "includeAll": True,
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": "label_values(bookie_SERVER_STATUS, job)", "refresh": 2},
        {"type": "query", "name": "instance", "label": "Bookie", "multi": True, "includeAll": True,
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": 'label_values(bookie_SERVER_STATUS{job=~"$job"}, instance)', "refresh": 2},
        {"type": "textbox", "name": "journal_mount", "label": "Journal mount points (regex)",
         "query": "/pulsar/data/bookkeeper/journal.*"},
    ]
    return {
        "title": "bookie-rs / BookKeeper bookie",
        "uid": "bookie-rs",
        "tags": ["bookkeeper", "bookie-rs"],
        "schemaVersion": 39,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {"list": []},
        "panels": panels,
    }


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bookie-rs.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(build(), f, indent=2)
        f.write("\n")
    print(out)
