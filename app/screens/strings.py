"""Every sentence the TUI shows a user, in one place (wording, tone and tests stay consistent)."""

from __future__ import annotations

TITLE = "profiler-tui"

# --- devices ----------------------------------------------------------------------------------
DEVICES_SUBTITLE = "Pick a target: a test file or a block device"
TEST_FILE_LABEL = "test file"
TEST_FILE_REASON = ("a scratch file created under the results directory ({path}) and deleted after a complete "
                    "run; nothing else is touched")
SCANNING = "Scanning block devices…"
# one line at 80 columns; it does not say why (a container without device access has them in /sys: the
# warning under it says so)
NO_DEVICES = "No block device can be used here; the test file is always available."
DEVICES_FAILED = "Listing block devices failed: {error}. The test file is still available."
# the results directory cannot be written (app.host.container.results_dir_problem): said on the first screen, and no run
# starts into it
RESULTS_CHOOSE = "(PROFILER_TUI_RESULTS=DIR when starting the TUI)"
RESULTS_UNWRITABLE = "No run can start — {problem}"
DEVICES_HINT = "enter: pick a target   p: presets on the test file   f: fleet hosts   ?: help"

# --- fleet hosts (devices screen, f) -------------------------------------------------------------
FLEET_SUBTITLE = "Fleet hosts: each point runs on all of them"
FLEET_HOST_PLACEHOLDER = "ssh://[user@]host[:port] or unix:///SOCKET, then optionally its own target path"
FLEET_TARGET_PLACEHOLDER = "/path on every host: a file or a block device there"
FLEET_HOST_LABEL = "add host"
FLEET_TARGET_LABEL = "target"
FLEET_NO_HOSTS = ("No fleet hosts: add one (ssh:// reaches `profiler-tui agent`'s socket on the host through SSH; "
                  "unix:// is an agent on this machine; tcp:// runs only from the command line). Each point then "
                  "runs on every host.")
FLEET_HINT = "enter: add the host, or go on with the target · T: test all · escape: devices"
FLEET_STATUS = "Fleet: {n} host{s} — the target you pick runs on every host (f: hosts)"
FLEET_HOST_ADDED = "Added {host}."
FLEET_HOST_TWICE = "{host} is in the list already (as {other}); give each host once."
FLEET_HOST_TARGET_BAD = "{path!r} is not an absolute path: a host's own target is a file or block device there."
FLEET_HOST_TOO_MANY = "A fleet run takes at most {n} hosts."
FLEET_NEEDS_TARGET = ("Give the target path used on every host (a file or a block device there), or add each host "
                      "with its own path.")
FLEET_TARGET_BAD = "{path!r} is not an absolute path: the target on every host is a file or a block device there."
FLEET_TARGET_DISPLAY = "{path} on {n} hosts"
FLEET_TEST_FILE_REASON = ("With fleet hosts the run uses the target given with the hosts (f) on each of the {n} "
                          "hosts: {path}. Picking a device here uses its path on every host instead.")
FLEET_NO_TARGET_YET = "none given yet"
FLEET_SOME_OWN_DISPLAY = " ({own} with its own)"
FLEET_OWN_TARGETS_DISPLAY = "{n} hosts, each on its own target"
FLEET_MEMORY = ("{preset} is a memory preset: it runs on this machine only. Remove the fleet hosts (f, x) to run it "
                "here, or pick a storage preset.")
FLEET_TEST_NONE = "not tested"
FLEET_TESTING = "testing…"
FLEET_AGENT_OK = "agent answers"
FLEET_AGENT_NONE = "agent not answering"
FLEET_UNREACHABLE = "unreachable"
FLEET_TEST_HINT = "t tests the connection: the host's devices with their verdicts, and whether its agent answers."
FLEET_TEST_RESULT = "{host}: {agent} at {address}; {n} device{s} listed"
FLEET_TEST_AGENT_DOWN = "{host}: nothing answers at {address}; start `profiler-tui agent` there before the run"
FLEET_TEST_NO_DEVICES = "devices of a tcp:// host other than this machine cannot be listed from here; use ssh://"
FLEET_TEST_DEVICES_FAILED = "its devices could not be listed: {error}"
FLEET_TARGET_OWN = "own: {path}"
FLEET_TARGET_COMMON = "(the target below)"
FLEET_CONFIRM_TITLE = "Run on {n} fleet hosts"
FLEET_CONFIRM_EXPLAIN = ("Each host judges its own target with the safety rules when the run starts; a host that "
                         "refuses stops the run before anything runs anywhere (it is named). A block device needs "
                         "this confirmation.")
FLEET_CONFIRM_TYPE = ("To allow write plans on a device that carries a filesystem or partition table, type {name} "
                      "below: it then applies on every host. Leave it empty otherwise.")
FLEET_CONFIRM_MISMATCH = "That is not {name}; type it exactly, or leave the field empty."
FLEET_LEGEND_PREFIX = "per host:"
FLEET_LEGEND_WAITING = "per host: waiting for the hosts' first samples…"
FLEET_LEGEND_MORE = "(+{n} more hosts not drawn)"

# --- confirmation -----------------------------------------------------------------------------
CONFIRM_TITLE = "Confirm the target {path}"
CONFIRM_WRITE = "Write plans: {verdict}"
CONFIRM_READ = "Read-only plans: {verdict}"
CONFIRM_TYPE_NAME = ("Write plans destroy what {path} carries. To allow them type the device name "
                     "({name}) below; leave it empty to run read-only plans only.")
CONFIRM_NAME_MISMATCH = "That is not {name}; type the device name exactly, or leave it empty for read-only plans."
CONFIRM_REFUSED = "{path} is refused for every plan: {reasons}"
CONFIRM_READ_ONLY = "Write plans are refused on {path}; only read-only plans can run."
CONFIRM_OK_BLOCK = "Every plan on a block device needs this confirmation."
CONFIRM_TOO_SMALL = ("Enlarge the terminal to at least {w}×{h} to confirm a device: at this size what you "
                     "confirm might not all be visible.")
CONFIRM_BUTTON = "Confirm"
CONFIRM_AUDIT_READING = "Reading the host's settings…"
CONFIRM_AUDIT_WARNING = "! {what}: {value} — {why}"
CONFIRM_AUDIT_SUMMARY = "{settings} checked, {warnings}; `profiler-tui audit {target}` lists them"
CONFIRM_TUNE = "ctrl+t: {state} — set {changes} to a benchmark's values for this run, put back when it ends"
CONFIRM_TUNE_ON = "tuning ON"
CONFIRM_TUNE_OFF = "tuning off"
CONFIRM_AUDIT_FAILED = "The host's settings could not be read ({error}); `profiler-tui audit {target}` lists them"
CANCEL_BUTTON = "Cancel"
CLOSE_BUTTON = "Close"

# --- presets ----------------------------------------------------------------------------------
PRESETS_SUBTITLE = "Target: {target}"
PRESETS_LOAD_ERROR = "Preset {name} cannot be loaded: {error}"
PREVIEW_POINTS = "{points} points, estimated {estimated}"
PREVIEW_WRITES = "writes to the target"
PREVIEW_READS = "reads only"
PREVIEW_MEMORY = "memory: no target (engine {engine})"
PREVIEW_OVERRIDES = "overrides: {overrides}"
PREVIEW_SET_IN_TUI = ("In the TUI, edit fields instead of --set: c opens the custom form filled from this "
                      "preset (rw modes, block sizes, queue depths, jobs, mix, runtime, size); other keys are set "
                      "with --set on the command line.")
PRESETS_LEGEND = "io W: storage that writes to the target (io: reads only)"
PRESETS_LEGEND_SHADOW = " · *: your preset, replacing the shipped one of that name"
PRESETS_SHADOWS = "Your preset {name} ({path}) replaces the shipped {name}."
WRITES_NOT_CONFIRMED = ("{preset} writes, but {target} is confirmed for read-only plans only; pick a read-only "
                        "preset or go back and confirm the device for writing.")

# --- custom sweep -----------------------------------------------------------------------------
CUSTOM_TITLE = "Custom sweep"
CUSTOM_HINT = ("Comma-separated values make an axis (bs: 4k,64k). tab/shift+tab move, ctrl+r runs, "
               "ctrl+s saves as a user preset.")
FORM_INVALID = "The form has errors (shown in red); fix them first — nothing was started."
NAME_REQUIRED = "Give the preset a name to save it."
SAVED = "Saved as {path}"
SAVE_FAILED = "Not saved: {error}"
SAVE_OVERWRITE = "Your preset {name} exists ({path}). Overwrite it?"
SAVE_SHADOW = ("{name} is a shipped preset. Save yours under the same name? It then replaces the shipped "
               "{name} in every list (delete your file to get it back).")
SAVE_KEPT = "Not saved: {name} is unchanged; pick another name."
CUSTOM_DESCRIPTION = "Custom sweep built in the TUI."
CUSTOM_FROM = "Custom sweep from {name}"
CUSTOM_FROM_DESCRIPTION = "Custom sweep built in the TUI from {name}."
CUSTOM_REPLICATES = "{tests} tests × {replicates} replicates: {totals}"

# --- run --------------------------------------------------------------------------------------
RUN_STARTING = "Starting {preset}…"
RUN_STARTED = "{pending} of {total} points to run, estimated {estimate} — results in {path}"
RUN_POINT = "[{n}/{total}] {label} …"
RUN_POINT_DONE = "[{n}/{total}] {label}: {metrics}"
RUN_POINT_FAILED = "[{n}/{total}] {label} FAILED: {error}"
RUN_POINT_SKIPPED = "[{n}] {label} skipped: {reason}"
RUN_OUTCOME = " — {outcome}"
RUN_FLEET_LABEL = "{label} @ {host}"
RUN_FLEET_HOSTS = " · {n} hosts"
RUN_PRECONDITION = "Preconditioning ({mode}): {description}, estimated {estimate} …"
RUN_PRECONDITION_LABEL = "preconditioning ({mode})"
RUN_PRECONDITION_DONE = "Preconditioned in {seconds}: {written:.2f} GB written at {bw}{outcome}"
RUN_SKIPPED_N = ", {n} skipped"
RUN_FINISHED = "Run {status}: {done}/{total} points{failed} — press r for the results table"
RUN_FAILED_N = ", {n} failed (see run.json)"
RUN_CANCELLED = "Run stopped; {done} completed points kept. To finish it: profiler-tui resume {path}"
RUN_ERROR = "The run stopped with an error: {error}. Completed points are kept."
RUN_CONFIRM_CANCEL = "Stop the run? fio is stopped and the completed points are kept."
RUN_CONFIRM_QUIT = "A run is in progress. Stop it and quit? The completed points are kept."
RUN_NO_RESULTS = "No results yet."
ETA_SKIPPED = " ({n} skipped)"
ETA = "{done}/{total} points · ETA {eta}"
ETA_DONE = "{done}/{total} points · {status}"
WAITING_FOR_DATA = "waiting for the first sample…"

# --- results / export -------------------------------------------------------------------------
RESULTS_TITLE = "Results: {path}"
RESULTS_READING = "Reading the results…"
RESULTS_EMPTY = "This results directory has no completed points yet."
RESULTS_FLEET = "fleet run on {n} hosts: each point's hosts, then their total (IOPS and MB/s summed)"
RESULTS_FLEET_TOTAL = "total"
RESULTS_FLEET_P99 = "total p99: of the hosts' merged histograms"
RESULTS_FLEET_FAILED = "failed"
RESULTS_FLEET_FAILED_N = "{n} failed (run.json)"
RESULTS_FLEET_OUTLIERS = "yellow: more than 3 MADs from the fleet median (the report's outliers)"
SORTED_BY = "sorted by {column} ({direction})"
# the results table's ± column: what it covers; the figure before it is the interval's centre (app.stats.frame)
RESULTS_COLUMNS = "columns, page {page} of {pages} (←/→)"
RESULTS_FLAG_MARK = "a flagged point's # ends in !"
RESULTS_CI = "± 95 % within this run, around its centre"
RESULTS_CPU_FIO = "IOPS/CPU: per CPU-second of fio's threads"
RESULTS_DEV_FIO = "dev/fio: bytes the device moved over fio's (! flagged: not on the device, or amplified)"
EXPORT_PROMPT = "Export report.md, report.html, plots/ and results.csv to (a directory, or a .md or .html path):"
EXPORTING = "Rendering the report…"
EXPORTED = "Report written: {path}"
EXPORTED_HTML = " and {html}"
EXPORT_FAILED = "Export failed: {error}"
EXPORT_CANNOT_WRITE = "Export failed: {path} cannot be written ({reason}); give another directory or .md path."
EXPORT_MISSING = "Report export is not available in this build yet (app.report is missing)."

# --- runs browser -----------------------------------------------------------------------------
RUNS_TITLE = "Runs in {roots}"
RUNS_LOADING = "Reading the results directories…"
RUNS_NONE = "No runs yet under {roots}: a run, or an import (ctrl+o), makes one."
RUNS_SHOWN = "{shown} of {total} runs{filtered} · newest first · enter opens · type to filter"
RUNS_FILTERED = " matching “{words}”"
RUNS_FILTER_PLACEHOLDER = "filter: type words (preset, target, status, date)…"
RUNS_MARKED = "marked: {marks}"
RUNS_MARK_FULL = "Two runs are marked already; unmark one (ctrl+t) first."
RUNS_COMPARE_HINT = "Mark two runs with ctrl+t to compare them, or mark one and pick a reference sheet."
RUNS_NOT_RESUMABLE = "{name} is {status}: there is nothing to resume."
RUNS_RESUME_CHECKING = "Checking the target of {name} again…"
RUNS_RESUME_REFUSED = "{name} cannot be resumed: {error}"
RUNS_RESUME_WRITES = ("{name} writes to {target}, but it was confirmed for read-only plans only; type the device "
                      "name to resume it.")
RUNS_UNREADABLE = "{name} cannot be opened: {problem}"
REFERENCE_TITLE = "Compare {name} with a reference sheet"
REFERENCE_NONE = "No reference sheet is installed (presets/references/*.toml)."

# --- compare ----------------------------------------------------------------------------------
COMPARE_TITLE = "Compare: {a} vs {b}"
COMPARE_WORKING = "Comparing…"
COMPARE_FAILED = "The comparison failed: {error}"
COMPARE_EXPORT_PROMPT = "Write the comparison (markdown) to:"
COMPARE_EXPORTED = "Comparison written: {path}"
COMPARE_LEGEND = ("green: the better side of each real difference (more IOPS or MB/s, less latency; its 95 % "
                  "interval excludes 0); differences within noise or without an interval stay plain")

# --- report view ------------------------------------------------------------------------------
REPORT_TITLE = "Report: {path}"
REPORT_RENDERING = "Rendering report.md…"
REPORT_BEFORE = ("report.md as rendered before the run changed — rendering it again… {seconds:.0f} s (it replaces this "
                 "once rendered)")
REPORT_RENDERING_FOR = "Rendering report.md… {seconds:.0f} s (escape goes back; the report shows here once rendered)"
REPORT_FAILED = "The report cannot be shown: {error}"
REPORT_FIGURE = "> **Figure {n}: {title}** — press 3 (Figures) to see it: `{path}`"
REPORT_NO_CURVES = ("This run has no curve to draw: a QD sweep, a loaded-latency run or a working-set run "
                    "has one.")
REPORT_CURVES_NOTE = ("Curves of the report drawn in the terminal from results.jsonl; the report's SVG "
                      "figures are in {plots}.")

# --- import -----------------------------------------------------------------------------------
IMPORT_TITLE = "Import fio JSON or MLC text outputs"
IMPORT_HINT = ("Paths separated by spaces (quote a path with spaces; → completes a path and escapes them). "
               "enter previews, ctrl+s imports into {root}.")
IMPORT_PLACEHOLDER = "/path/to/fio-output.json /path/to/mlc-loaded-latency.txt"
IMPORT_NOTHING = "Give at least one file to import."
IMPORT_PREVIEWING = "Reading the files…"
IMPORT_PREVIEW_FILE = "{file}: {kind}, {points} point(s){versions}"
IMPORT_PREVIEW_ERROR = "{error}"
IMPORT_PREVIEW_TOTAL = "{points} from {files} file(s) would be imported."
IMPORT_DONE = "Imported {points} into {path}"
IMPORT_KIND = {"storage": "storage point{s} (fio)", "memory": "memory point{s} (MLC)"}
RESULTS_KINDS = "{counts}; showing the {kind} rows, k shows the {other} rows"
IMPORT_FAILED = "Nothing imported: {error}"

YES = "Yes"
NO = "No"

HELP = """\
# profiler-tui — keys

Everything works from the keyboard; the footer shows the keys of the current screen.
`ctrl+p` opens the command palette, `?` this help, `q` or `ctrl+c` quits (asking first
while a sweep runs: it is stopped and its completed points are kept; in the runs browser
letters filter, so there only `ctrl+c` quits). The smallest supported terminal is 40×14.

## Devices
- `↑/↓` move, `enter` pick the highlighted target (the *test file* row is always safe)
- `p` presets on the test file, `r` rescan devices, `f` fleet hosts
- The *write plan* column is the safety verdict for a plan that writes (*type name*: the device carries
  data and its name must be typed); the panel below lists the reasons for writes and reads.

## Fleet hosts (`f` on the devices screen)
- Add hosts (`ssh://[user@]host[:port]` or `tcp://ADDR:PORT`, optionally followed by that host's own
  target path), `t` tests the highlighted host's connection (its devices and verdicts, whether its
  agent answers), `T` tests all, `x` removes one. With hosts, a run is a fleet run: every point runs
  on all hosts at once, on the target given here (or each host's own). `p` presets, `f` devices.

## Target confirmation
- A device with a filesystem or partition table needs its name typed before write plans may run;
  leave the field empty to run read-only plans only. `enter` confirms, `escape` cancels.

## Presets
- `↑/↓` move (the preview shows axes, point count and estimated time), `enter` run,
  `c` custom sweep filled from the highlighted preset, `escape` back.
- Kind: `io` storage that only reads, `io W` storage that writes to the target, `mem` memory.
  `*` after a name: your preset replaces the shipped one of that name.

## Custom sweep
- `tab`/`shift+tab` between fields; comma-separated values make an axis.
- From a preset it edits that preset: a field left as shown changes nothing (its groups, labels and repeats
  stay), and only the keys its modes read are shown. The note on top says when an edit cannot keep the
  preset's pairing (a value in none of its groups) and what runs instead.
- `ctrl+r` run, `ctrl+s` save as a user preset, `escape` back. Errors show under their field.

## Run
- `1` live charts, `2` latency–throughput curve, `3` log, `4` the point's latency heat map (storage);
  `c`/`escape` stops the run (asks first; completed points are kept); `r` results when it is over.
- `t` switches the latency chart between mean and p99 and the tail view, p99 (green) and p99.9 (red):
  each second's own percentiles, from the histogram bins of that second (a second with few I/Os has a coarse
  p99.9); `t` again goes back.

## Results
- `s` sort by the next column, `S` reverse the order, `e` export report.md and plots,
  `v` the report, `escape` back, `d` devices, `f` the report's figures as pictures (as the report's `3`);
  `u` MB/s or MiB/s anywhere; `k` the other kind's rows in a run with storage and memory points (an import);
  `←/→` the other columns when they do not all fit (`#` and the test stay; a flagged point's `#` ends in `!`
  while its flags are on another page).
- `dev/fio`: the bytes the device moved over fio's, in the point's direction (read/write for a mix);
  `!` after it: flagged not-on-device or amplified; `—`: no counters or no I/O that way.

## Runs (`h` on every other screen)
- Every results directory, newest first: preset, kind, target, start, points done/planned, status
  (`running` only while a process holds the run).
- Typing filters: every letter (`q` and `h` too) or digit goes to the filter, as `/` does (words match preset,
  target, status, date); `↓`/`enter` back to the table, `escape` clears it. So the commands are ctrl keys:
  `enter` opens the results; `ctrl+r` the report; `ctrl+g` resumes an interrupted run (the target is
  checked and confirmed again); `ctrl+t` marks a run (A, then B) and `ctrl+s` compares the two side by
  side, or one run with a reference sheet; `ctrl+o` imports fio JSON / MLC text; `ctrl+l` reloads;
  `escape` back (`ctrl+c` quits).
- `ctrl+y` replays a finished storage run's live view from its kept per-second samples, with the run's charts:
  `+`/`-` change the speed (1, 2, 5, 10, 30, 60×; 10× to begin), `space` pauses, `escape` ends it.

## Compare
- Ratio tables as `profiler-tui compare` writes them, one row per workload and figure, the better side in
  green; `↑/↓`/`PgUp`/`PgDn` scroll the page, `←/→` a table wider than the terminal; `e` exports the
  markdown, `escape` back.

## Report
- report.md with its table of contents (`t` shows or hides it); `1` the report, `2` its curves drawn in the
  terminal, `3` its figures as pictures (each figure line of the report names its number). `escape` back.
- A table too wide for the terminal shows a page of its columns beside the ones that say which row is which
  ("Columns, page 1 of 4"): `←/→` the others, on the tables in view.

## Figures (`3` in the report, `f` in the results)
- The report's figures drawn in the terminal: Kitty graphics or Sixel where the terminal answers that it can,
  half-block characters otherwise (`PROFILER_TUI_IMAGES=kitty|sixel|halfblock|none` decides instead).
  `←/→` the previous or next figure, `o` writes it as PNG beside its SVG (plots/NAME.png).

## Import
- Type paths (→ completes, escaping spaces: a name with spaces stays one path), `enter` previews what is
  recognised, `ctrl+s` imports and opens the results.
"""

# --- run: what fio is doing (live phase) -------------------------------------------------------
PHASE_LAYOUT = "Laying out the test file: {done} of {total} ({percent} %)"
PHASE_LAYOUT_UNKNOWN = "Laying out the test file ({total}) before measuring…"
PHASE_RAMP = "Ramp: {done} of {total} s, not measured"
PHASE_MEASURING = "Measuring"
# after the phase while a point measures: the running 95 % interval of its mean IOPS (app.stats.summary.live_interval)
PHASE_INTERVAL = "  ·  IOPS {interval}"
PHASE_STEADY = "Steady-state window: {done} of {total} s"
PHASE_PRECONDITIONING = "Preconditioning the target, not measured"
PHASE_PRECONDITION_STEADY = "Preconditioning until steady: window {done} of {total} s"

# --- the units toggle (u) and the settings file ---
UNITS_BINARY = "Bandwidths in MiB/s (binary: 2^20 bytes per second); u: MB/s"
UNITS_DECIMAL = "Bandwidths in MB/s (decimal: 10^6 bytes per second); u: MiB/s"
UNITS_NOT_SAVED = "The units could not be remembered: {path}: {reason}"

# --- replay: a finished run's live view again, from its kept samples (app.engine.replay) -----------------------
REPLAY_LOADING = "Reading the samples of {name}…"
REPLAY_REFUSED = "{name} cannot be replayed: {error}"
REPLAY_TITLE = "replay {speed} · {preset} — {target}"
REPLAY_PAUSED = "paused"
REPLAY_SPEED = "{speed:g}×"
REPLAY_STARTED = ("Replay of {path}: {points} points, {samples} one-second samples, {run} of run time shown in "
                  "about {wall} at {speed:g}× (time without samples shortened to at most {gap:g} s a gap). Nothing is "
                  "measured or written.")
REPLAY_PROBLEMS = "Lines of the samples files were left out; the log (3) names them ({n} notes)."
REPLAY_FINISHED = "The run ended {status}: {done}/{total} points{failed} (its results: enter in the runs browser)"
REPLAY_DONE = "Replay over: {run} of run time in {wall}."


def kind_counts(counts: dict[str, int]) -> str:
    """``{"storage": 1, "memory": 19}`` → "1 storage point (fio) and 19 memory points (MLC)": what an import
    holds, told per kind, since a storage point and a memory point have different figures."""
    parts = [f"{counts[k]} " + IMPORT_KIND[k].format(s="" if counts[k] == 1 else "s")
             for k in IMPORT_KIND if counts.get(k)]
    return " and ".join(parts) or "0 points"
