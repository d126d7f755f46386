"""Confinement a process puts on itself once it runs (standard library only: its source is
prepended to the sandbox child's, `python -I -S -c`): no core dumps and no ptrace of it
(`PR_SET_DUMPABLE` 0), no new privileges, and on x86-64 Linux a seccomp filter that fails
the system calls a plan never needs and an escape would (sockets, exec, fork and clone,
ptrace, mounts, namespaces, keys, bpf) with EPERM. `harden()` returns what is in force."""

import ctypes
import platform
import struct

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
# x86-64 numbers: socket, connect, accept, bind, listen, socketpair, accept4, clone, fork,
# vfork, execve, execveat, clone3, ptrace, mount, umount2, chroot, pivot_root, unshare,
# setns, keyctl, add_key, request_key, bpf, perf_event_open, process_vm_readv/writev,
# open_by_handle_at, userfaultfd
_DENIED_X86_64 = (41, 42, 43, 49, 50, 53, 288, 56, 57, 58, 59, 322, 435, 101, 165, 166, 161,
                  155, 272, 308, 250, 248, 249, 321, 298, 310, 311, 304, 323)


def _seccomp_program(denied):
    """A classic-BPF seccomp filter: another architecture, or a denied call, gets EPERM."""
    code = [(0x20, 0, 0, 4),  # A = arch
            (0x15, 1, 0, _AUDIT_ARCH_X86_64),  # arch == x86-64: skip the next
            (0x06, 0, 0, _RET_EPERM),
            (0x20, 0, 0, 0)]  # A = the call's number
    for number in denied:
        code += [(0x15, 0, 1, number), (0x06, 0, 0, _RET_EPERM)]
    code.append((0x06, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("HBBI", *op) for op in code), len(code)


def harden():
    in_force = []
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return in_force
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0:
        in_force.append("not dumpable")
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        in_force.append("no new privileges")
        if platform.system() == "Linux" and platform.machine() == "x86_64":
            raw, count = _seccomp_program(_DENIED_X86_64)
            buffer = ctypes.create_string_buffer(raw, len(raw))

            class _Program(ctypes.Structure):
                _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

            program = _Program(count, ctypes.cast(buffer, ctypes.c_void_p))
            if prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0) == 0:
                in_force.append("seccomp")
    return in_force
