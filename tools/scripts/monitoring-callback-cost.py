#!/usr/bin/env python3
"""What a sys.monitoring callback that does nothing costs (CPython 3.12+), per event.

    PYTHON tools/scripts/monitoring-callback-cost.py

Times a loop of two C calls a turn, without and with CALL, C_RETURN and C_RAISE callbacks that
return None, and prints the difference per event: the part of the GIL tracer's cost that any
Python-level tracer pays (issue 26, docs/PERFORMANCE.md). Pin it to one CPU (taskset -c 0).
"""
import sys, time
mon = sys.monitoring
ev = mon.events
def work(n):
    l = []
    ap = l.append
    for i in range(n):
        ap(i)      # a C call: CALL and C_RETURN events
        len(l)
    return l
N = 200000
t0 = time.perf_counter(); work(N); base = time.perf_counter() - t0
mon.use_tool_id(4, "t")
def on_call(code, off, c, a): return None
def on_ret(code, off, c, a): return None
mon.register_callback(4, ev.CALL, on_call)
mon.register_callback(4, ev.C_RETURN, on_ret)
mon.register_callback(4, ev.C_RAISE, on_ret); mon.set_events(4, ev.CALL | ev.C_RETURN | ev.C_RAISE)
t0 = time.perf_counter(); work(N); traced = time.perf_counter() - t0
events = N * 2 * 2
print("no-op CALL+C_RETURN callbacks: %.3f us per event (%d events)" % ((traced - base) / events * 1e6, events))
