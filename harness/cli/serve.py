"""`lifebench serve [-- COMMAND ...]`: a real model on this machine, nothing configured.

Serves the embedded model (SmolLM2-135M-Instruct, `lifebench.llm.embedded`), or `--gguf
FILE`, on a free loopback port, and prints its base URL and model name. Alone, it serves
until Ctrl-C or SIGTERM (exit 0), or until the server dies (exit 1). With a command after
`--`, it runs the command with `{url}` and `{model}` replaced, starts the server again (on
the same port) if it dies under the command, up to `--restarts` times, then stops it: the
command's exit code. It ends with its parent, and leaves no process behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.api.processes import die_with_parent
from lifebench.cli.base import EXIT_INCOMPLETE, EXIT_OK, SubCommand


class Serve(SubCommand):
    name = "serve"
    help = "serve a real model (the embedded SmolLM2-135M, or --gguf FILE) on a loopback port"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from lifebench.llm.embedded import DEFAULT_N_CTX, EMBEDDED_MODEL

        parser.add_argument("--gguf", metavar="FILE",
                            help="serve this GGUF file (default: the embedded model's weights)")
        parser.add_argument("--model", metavar="NAME",
                            help=f"the name it is served under (default: {EMBEDDED_MODEL}, or "
                                 f"the --gguf file's name without .gguf)")
        parser.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, metavar="N",
                            help=f"the context window in tokens (default {DEFAULT_N_CTX}); "
                                 f"runs read it from the server")
        parser.add_argument("--port", type=int, default=0,
                            help="the loopback port (default: a free one)")
        parser.add_argument("--threads", type=int, default=0,
                            help="threads for the model (default: $LIFEBENCH_SERVE_THREADS, else every core)")
        parser.add_argument("--prompt-cache", action="store_true",
                            help="keep recent prompts' states in RAM (llama-cpp-python's "
                                 "cache): worth it when many streams share the server; a "
                                 "loss with one (docs/serving.md, what it saves)")
        parser.add_argument("--restarts", type=int, default=1, metavar="N",
                            help="with a command: start a server that died again this many "
                                 "times, running the command again (default 1)")
        parser.add_argument("beside", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                            help="after `--`: a command to run while the model is served; "
                                 "{url} and {model} in it become the base URL and the name "
                                 "(also in LIFEBENCH_BASE_URL and LIFEBENCH_MODEL)")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.llm import embedded

        command = args.beside[1:] if args.beside[:1] == ["--"] else args.beside
        if args.n_ctx < 256:
            raise UserError(f"--n-ctx {args.n_ctx}: give at least 256 tokens")
        if args.restarts < 0:
            raise UserError("--restarts: give 0 or more")
        embedded.threads_from_environment()  # a bad value is refused here, not by the server
        if not embedded.server_installed():
            raise UserError(f"lifebench serve needs llama-cpp-python's server, which is not "
                            f"installed: {embedded.INSTALL_HINT}")
        gguf = Path(args.gguf) if args.gguf else embedded.embedded_weights()
        embedded.check_weights(gguf, pinned=not args.gguf)
        if args.port:
            embedded.check_port(args.port)
        model = args.model or (gguf.name[:-5] if args.gguf and gguf.name.endswith(".gguf") else
                               gguf.name if args.gguf else embedded.EMBEDDED_MODEL)
        die_with_parent(signal.SIGTERM)  # serve ends with its shell, or its make
        server = embedded.ServerProcess(embedded.ServerOptions(
            gguf, model, args.n_ctx, args.port, args.threads, args.prompt_cache))

        def say(line: str) -> None:
            print(f"lifebench serve: {line}", file=sys.stderr, flush=True)

        try:
            started = time.monotonic()
            try:
                server.start()
            except embedded.ServerFailed as exc:
                say(f"{exc}")
                return EXIT_INCOMPLETE
            say(f"{model} at {server.url} (context window {args.n_ctx:,} tokens; ready in "
                f"{time.monotonic() - started:.1f} s)" + ("" if command else "; Ctrl-C stops it"))
            if command:
                return embedded.run_beside(server, command, args.restarts, say)
            print(f"LIFEBENCH_BASE_URL={server.url}\nLIFEBENCH_MODEL={model}", flush=True)
            return _serve_until_stopped(server, say)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: how serving alone is ended
            if command:
                raise
            return EXIT_OK
        finally:
            server.close()


def _serve_until_stopped(server, say) -> int:
    """Serve until Ctrl-C or SIGTERM (0), or the server's death (1)."""
    parent = os.getppid()
    while server.alive():
        if os.getppid() != parent:  # the parent died before its death signal was set
            return EXIT_OK
        time.sleep(0.5)
    say(f"the server died (exit code {server.proc.returncode}){server.last_words()}")
    return EXIT_INCOMPLETE
