"""Which modules CI's run leaves to the long tier, and the order the rest start in.

CI has 30 minutes on a 2-core host whose speed varies threefold (docs/testing.md, "Tiers"): the
whole suite took 47 minutes of pytest on three workers on the slow host of 2026-11-30. The
landing run (`bash scripts/test.sh`, what CI runs) leaves out the `long` modules below: each
checks a size, a harness, a soak, a bound on time that wants a quiet machine, a full-size
photographed leak or a second look past the contract, and the logic it drives is checked small
by a landing module named beside it. `bash scripts/test.sh --long` runs them (their `alone`
ones by themselves, after the rest), nightly and before a change to what they cover lands.

`HEAVIEST_FIRST`: xdist hands out whole modules in collection order, so the run's tail is
whatever costly module comes last alphabetically (the last 7 minutes of that run were two
`test_scale_*` modules on one worker while the others idled). The landing modules that take
longest (their wall time by `tests.cpu_by_module` on that run, or on the run after their cuts)
start first; every other module keeps its order after them. Re-measure when a module's cost
changes by much (the order is a schedule, never a selection: a stale entry only costs time).
"""

from __future__ import annotations

LONG: dict[str, str] = {
    # module: what it checks at size, and where its logic is checked small
    "tests/test_scale_bulk.py": "bulk steps over 1,250 records each; small: test_backup, "
                                "test_revoke_generation, test_crash_kill (verify, gc)",
    "tests/test_scale_isolation.py": "another tenant's pages beside 2 x 10^4 records; small: "
                                     "test_fair_share, test_scale_reads",
    "tests/test_bench_scale_shapes.py": "the bench harness's shapes end to end; small: "
                                        "test_scale_shapes",
    "tests/test_bench_settle.py": "the bench harness's settling probe; small: none needed (a "
                                  "harness, not the product)",
    "tests/test_vaultd_zygote.py": "the tests' vaultd zygote: a forked vaultd compared field by "
                                   "field with a fresh one; small: none needed (a harness, not "
                                   "the product)",
    "tests/test_admin_zygote.py": "the tests' vault-admin zygote: a forked command compared with "
                                  "a fresh interpreter's; small: none needed (a harness, not the "
                                  "product)",
    "tests/test_server_memory.py": "the server's resident memory at rest and beside four 20 MB "
                                   "uploads; small: test_render_layers (the server loads no "
                                   "drawing module)",
    "tests/test_install_without_compiler.py": "a fresh virtualenv install with no C compiler; "
                                              "small: test_pattern_blend (the Pillow blend)",
    # Soaks: kills at random moments, a bounded load of 200 clients.
    "tests/test_audit_crash.py": "two sequencers killed at random moments; small: "
                                 "test_audit_late, test_audit_blocks",
    "tests/test_access_log_older_numbers_crash.py": "an older log's numbering killed midway; "
                                                    "small: test_access_log_older_numbers",
    "tests/test_load.py": "200 clients for 20 s; small: test_upload_admission, test_fair_queue",
    # Bounds on time that want a quiet machine (`alone`), and the cost of a miss in yardsticks.
    "tests/test_fair_render.py": "another account's page beside bursts of heavy pages; small: "
                                 "test_fair_queue, test_pool_fairness",
    "tests/test_fair_share_http.py": "the fair share's holds timed against a real vaultd; "
                                     "small: test_fair_share",
    "tests/test_office_fairness.py": "another account's Office upload beside conversions; "
                                     "small: test_office_queue, test_office_sheet_cost",
    "tests/test_forensic_framed_cost.py": "a framed miss's CPU in yardsticks; small: "
                                          "test_forensic_small_framed",
    "tests/test_forensic_photo_cost.py": "a phone photo miss's CPU in yardsticks; small: "
                                         "test_forensic_small",
    # Leaks photographed at full size (12 MP pictures made and read in the test process).
    "tests/test_forensic_photo.py": "phone photos of a screen read; small: test_trace_api's "
                                    "leaks, test_forensic_small",
    "tests/test_forensic_framed_crop.py": "a photo's crop read by the fold scan; small: "
                                          "test_forensic_small_framed",
    "tests/test_forensic_rectify.py": "a framed photo's perspective from the page's lines; "
                                      "small: test_forensic_small_framed",
    "tests/test_forensic_rectify_trace.py": "the untuned generator's framed photo traced; "
                                            "small: test_forensic_small_framed",
    "tests/test_placement_year.py": "a year of views behind a washed leak; small: "
                                    "test_trace_year_days, test_leak_tracing_http",
    # Depth past the contract, each a second or third look at what a landing module checks.
    "tests/test_storage_tools.py": "verify, gc and migrate on Azure and S3 too; small: "
                                   "test_crash_kill (verify, gc), test_backend_contract",
    "tests/test_storage_plugin.py": "a backend from an entry point (the recipe's example); "
                                    "small: test_backend_contract",
    "tests/test_backup_azure.py": "a backup of Azure blobs; small: test_backup",
    "tests/test_multi_process.py": "two vaultd on one database and store, outages included; "
                                   "small: test_crash_kill, test_backend_contract",
    "tests/test_revoke_marking_stopped.py": "a revoke-all's marking cut by a graceful stop, "
                                            "finished by the next start; small: "
                                            "test_scale_delete_crash, test_revoke_generation",
    "tests/test_webhooks_processes.py": "two vaultd delivering from one outbox, one killed; "
                                        "small: test_webhooks_durability",
    "tests/test_notifications_processes.py": "two vaultd reporting first opens, one killed with "
                                             "a mail queued; small: test_notifications",
    "tests/test_db_restart.py": "vaultd killed alone or with its group and restarted; small: "
                                "test_crash_kill",
    "tests/test_db_outage.py": "the database gone, restarting or locked; small: "
                               "test_crash_kill, test_disk_full",
    "tests/test_faults.py": "killed workers, server and database; small: test_crash_kill, "
                            "test_disk_full",
    "tests/test_embedded_db_stop.py": "the embedded database's stop on SIGTERM; small: "
                                      "test_graceful_stop",
    "tests/test_server_lifecycle.py": "the embedded database comes and goes with vaultd; "
                                      "small: test_graceful_stop, test_crash_kill",
    "tests/test_office_upload.py": "every Office format through LibreOffice, a hang; small: "
                                   "test_office_sheets, test_office_encodings_http",
    "tests/test_fuzz_inputs.py": "Hypothesis over every route's inputs; small: "
                                 "test_fuzz_parsers, the API contract modules",
    "tests/test_forensic_mark.py": "the mark after every leak of bench.leakmark; small: "
                                   "test_trace_api, test_forensic_codes",
    "tests/test_trace_placement_http.py": "washed pages traced by placement over HTTP; small: "
                                          "test_leak_tracing_http",
    "tests/test_forensic_jitter.py": "every word of a page moved back (a docs measurement); "
                                     "small: test_forensic_codes",
    "tests/test_forensic_placement.py": "the placement mark's best wash; small: "
                                        "test_trace_year_days",
    "tests/test_scale_room_crash.py": "a room's revoke-all and deletion of 1,000 links each, "
                                      "killed in the background work, over HTTP; small: "
                                      "test_room_generation, test_scale_delete_crash",
    "tests/test_trace_api_leaks.py": "every leak of both served pages and 40 unmarked images "
                                     "over HTTP; small: test_trace_api (one of each reading)",
    "tests/test_trace_agreement.py": "vault-admin trace and the API on a leak of each bench's "
                                     "kind; small: test_trace_api (vault-admin trace of a leak)",
}

HEAVIEST_FIRST: tuple[str, ...] = (
    "tests/test_trace_api.py",
    "tests/test_openapi_fuzzing.py",
    "tests/test_scale_delete_crash.py",
    "tests/test_trace_published_layout.py",
    "tests/test_first_hour.py",
    "tests/test_backup.py",
    "tests/test_viewer_browser.py",
    "tests/test_webhooks_durability.py",
    "tests/test_console_browser.py",
    "tests/test_crash_kill.py",
    "tests/test_sandbox_escape.py",
    "tests/test_console_settings_browser.py",
    "tests/test_hostile_files.py",
    "tests/test_audit_catch_up.py",
    "tests/test_cli.py",
)


# Modules whose every test is `slow` and whose collection costs seconds a worker: not collected
# at all by a selection that would deselect each of their tests (the fast loop's `not slow`).
SLOW_ONLY: dict[str, str] = {
    "tests/test_openapi_fuzzing.py": "schemathesis makes every route's test and draws its cases "
                                     "at collection: about 2 s a worker",
}


def deselects_slow_only(marks: str) -> bool:
    """Whether `-m marks` deselects a test whose only marker is `slow`. False where it cannot
    tell (no expression, or pytest's expression parser, a private module, gone or refusing it):
    the module is then collected, as any other."""
    if not marks:
        return False
    try:
        from _pytest.mark.expression import Expression

        return not Expression.compile(marks).evaluate(lambda name, **kwargs: name == "slow")
    except Exception:  # noqa: BLE001 - any doubt collects the module, as before
        return False


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def start_rank(nodeid: str) -> int:
    """Where a test's module starts: its place in `HEAVIEST_FIRST`, or after all of them."""
    module = module_of(nodeid)
    return HEAVIEST_FIRST.index(module) if module in HEAVIEST_FIRST else len(HEAVIEST_FIRST)
