"""Confinement a process puts on itself once it runs (standard library only: its source is
prepended to the sandbox child's, `python -I -S -c`): no core dumps and no ptrace of it
(`PR_SET_DUMPABLE` 0), no new privileges, and on x86-64 Linux a seccomp filter that fails
the system calls a plan never needs and an escape would (sockets, exec, fork and clone,
ptrace and other processes' memory, descriptors and signals by pidfd, io_uring, mounts old
and new, namespaces, keys, bpf, SysV and POSIX IPC, any x32 call, and every way two
sandboxes could signal each other through a file they both see: `flock`, `fcntl`'s lock,
lease and notify commands, inotify and fanotify) with EPERM. `harden()` returns what is in
force."""

import ctypes
import platform
import struct

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000  # x32 calls share x86-64's arch value: told apart by this bit
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
# x86-64 numbers, by what they would reach:
_DENIED_X86_64 = (
    41, 42, 43, 49, 50, 53, 288,        # socket, connect, accept, bind, listen, socketpair,
                                        # accept4
    56, 57, 58, 59, 322, 435,           # clone, fork, vfork, execve, execveat, clone3
    101, 310, 311, 312, 440,            # ptrace, process_vm_readv/writev, kcmp, process_madvise
    424, 434, 438,                      # pidfd_send_signal, pidfd_open, pidfd_getfd
    425, 426, 427,                      # io_uring_setup, io_uring_enter, io_uring_register
    165, 166, 161, 155,                 # mount, umount2, chroot, pivot_root
    428, 429, 430, 431, 432, 433, 442,  # open_tree, move_mount, fsopen, fsconfig, fsmount,
                                        # fspick, mount_setattr
    272, 308,                           # unshare, setns
    250, 248, 249, 321, 298, 304, 323,  # keyctl, add_key, request_key, bpf, perf_event_open,
                                        # open_by_handle_at, userfaultfd
    29, 30, 31, 67, 64, 65, 66, 220,    # shmget, shmat, shmctl, shmdt, semget, semop, semctl,
                                        # semtimedop
    68, 69, 70, 71,                     # msgget, msgsnd, msgrcv, msgctl
    240, 241, 242, 243, 244, 245,       # mq_open, mq_unlink, mq_timedsend, mq_timedreceive,
                                        # mq_notify, mq_getsetattr
    467,                                # open_tree_attr
    73, 253, 294, 300,                  # flock, inotify_init, inotify_init1, fanotify_init
)
_FCNTL = 72
# fcntl's commands that lock, lease or watch a file (its second argument's low 32 bits,
# which are all the kernel reads): F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK,
# F_OFD_SETLKW, F_SETLEASE, F_NOTIFY
_FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1026)


def _seccomp_program(denied):
    """A classic-BPF seccomp filter: another architecture, an x32 call, or a denied call
    gets EPERM."""
    code = [(0x20, 0, 0, 4),  # A = arch
            (0x15, 1, 0, _AUDIT_ARCH_X86_64),  # arch == x86-64: skip the next
            (0x06, 0, 0, _RET_EPERM),
            (0x20, 0, 0, 0),  # A = the call's number
            (0x45, 0, 1, _X32_SYSCALL_BIT),  # the x32 bit set: the next, else skip it
            (0x06, 0, 0, _RET_EPERM)]
    for number in denied:
        code += [(0x15, 0, 1, number), (0x06, 0, 0, _RET_EPERM)]
    # fcntl: its command (args[1], at offset 24 of seccomp_data) decides
    commands = [(0x20, 0, 0, 24)]
    for command in _FCNTL_DENIED:
        commands += [(0x15, 0, 1, command), (0x06, 0, 0, _RET_EPERM)]
    commands.append((0x06, 0, 0, _RET_ALLOW))
    code += [(0x15, 0, len(commands), _FCNTL)] + commands
    code.append((0x06, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("HBBI", *op) for op in code), len(code)


def libc_prctl():
    """libc's `prctl`, typed; None where there is no libc to load."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl


def harden():
    in_force = []
    prctl = libc_prctl()
    if prctl is None:
        return in_force
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
