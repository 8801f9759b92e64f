"""Every sentence the TUI shows a user, in one place (wording, tone and tests stay consistent)."""

from __future__ import annotations

TITLE = "profiler-tui"

# --- devices ----------------------------------------------------------------------------------
DEVICES_SUBTITLE = "Pick a target: a test file or a block device"
TEST_FILE_LABEL = "test file"
TEST_FILE_REASON = ("a scratch file created under the results directory ({path}) and deleted after a complete "
                    "run; nothing else is touched")
SCANNING = "Scanning block devices…"
NO_DEVICES = "No block devices found (lsblk and /sys list none); the test file is always available."
DEVICES_FAILED = "Listing block devices failed: {error}. The test file is still available."
DEVICES_HINT = "enter: pick the highlighted target   p: presets on the test file   ?: help"

# --- confirmation -----------------------------------------------------------------------------
CONFIRM_TITLE = "Confirm the target {path}"
CONFIRM_WRITE = "Write plans: {verdict}"
CONFIRM_READ = "Read-only plans: {verdict}"
CONFIRM_TYPE_NAME = ("Write plans destroy what {path} carries. To allow them type the device name "
                     "({name}) below; leave it empty to run read-only plans only.")
CONFIRM_NAME_MISMATCH = "That is not {name}; type the device name exactly, or leave it empty for read-only plans."
CONFIRM_REFUSED = "{path} is refused for every plan: {reasons}"
CONFIRM_READ_ONLY = "Write plans are refused on {path}; only read-only plans can run."
CONFIRM_OK_BLOCK = "Every plan on a block device needs this confirmation (the TUI's --yes)."
CONFIRM_TOO_SMALL = ("Enlarge the terminal to at least {w}×{h} to confirm a device: at this size what you "
                     "confirm might not all be visible.")
CONFIRM_BUTTON = "Confirm"
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
WRITES_NOT_CONFIRMED = ("{preset} writes, but {target} is confirmed for read-only plans only; pick a read-only "
                        "preset or go back and confirm the device for writing.")

# --- custom sweep -----------------------------------------------------------------------------
CUSTOM_TITLE = "Custom sweep"
CUSTOM_HINT = ("Comma-separated values make an axis (bs: 4k,64k). tab/shift+tab move, ctrl+r runs, "
               "ctrl+s saves as a user preset.")
FIELD_REQUIRED = "a value is required"
FORM_INVALID = "The form has errors (shown in red); fix them first — nothing was started."
NAME_REQUIRED = "Give the preset a name to save it."
SAVED = "Saved as {path}"
SAVE_FAILED = "Not saved: {error}"
SAVE_OVERWRITE = "Your preset {name} exists ({path}). Overwrite it?"
SAVE_SHADOW = ("{name} is a shipped preset. Save yours under the same name? It then replaces the shipped "
               "{name} in every list (delete your file to get it back).")
SAVE_KEPT = "Not saved: {name} is unchanged; pick another name."
CUSTOM_DESCRIPTION = "Custom sweep built in the TUI."

# --- run --------------------------------------------------------------------------------------
RUN_STARTING = "Starting {preset}…"
RUN_STARTED = "{pending} of {total} points to run, estimated {estimate} — results in {path}"
RUN_POINT = "[{n}/{total}] {label} …"
RUN_POINT_DONE = "[{n}/{total}] {label}: {metrics}"
RUN_POINT_FAILED = "[{n}/{total}] {label} FAILED: {error}"
RUN_POINT_SKIPPED = "[{n}] {label} skipped: {reason}"
RUN_OUTCOME = " — {outcome}"
RUN_PRECONDITION = "Preconditioning ({mode}): {description}, estimated {estimate} …"
RUN_PRECONDITION_LABEL = "preconditioning ({mode})"
RUN_PRECONDITION_DONE = "Preconditioned in {seconds}: {written:.2f} GB written at {bw:.0f} MB/s{outcome}"
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
RESULTS_EMPTY = "This results directory has no completed points yet."
SORTED_BY = "sorted by {column} ({direction})"
EXPORT_PROMPT = "Export report.md, plots/ and results.csv to (a directory, or a .md file path):"
EXPORTING = "Rendering the report…"
EXPORTED = "Report written: {path}"
EXPORT_FAILED = "Export failed: {error}"
EXPORT_MISSING = "Report export is not available in this build yet (app.report is missing)."

YES = "Yes"
NO = "No"

HELP = """\
# profiler-tui — keys

Everything works from the keyboard; the footer shows the keys of the current screen.
`ctrl+p` opens the command palette, `?` this help, `q` or `ctrl+c` quits (asking first
while a sweep runs: it is stopped and its completed points are kept). The smallest
supported terminal is 40×14.

## Devices
- `↑/↓` move, `enter` pick the highlighted target (the *test file* row is always safe)
- `p` presets on the test file, `r` rescan devices
- The *write plan* column is the safety verdict for a plan that writes (*type name*: the device carries
  data and its name must be typed); the panel below lists the reasons for writes and reads.

## Target confirmation
- A device with a filesystem or partition table needs its name typed before write plans may run;
  leave the field empty to run read-only plans only. `enter` confirms, `escape` cancels.

## Presets
- `↑/↓` move (the preview shows axes, point count and estimated time), `enter` run,
  `c` custom sweep, `escape` back.

## Custom sweep
- `tab`/`shift+tab` between fields; comma-separated values make an axis.
- `ctrl+r` run, `ctrl+s` save as a user preset, `escape` back. Errors show under their field.

## Run
- `1` live charts, `2` latency–throughput curve, `3` log; `c`/`escape` stops the run
  (asks first; completed points are kept); `r` results when it is over.

## Results
- `s` sort by the next column, `S` reverse the order, `e` export report.md and plots,
  `escape` back, `d` devices.
"""
