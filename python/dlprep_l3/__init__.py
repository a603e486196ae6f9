"""L3 images in Python: L3 files to NumPy arrays and back, and batches of them into training
tensors (in GPU memory with CUDA). It loads libdlprep_l3.so (man/libdlprep_l3.3), built next to
this file by the dlprep build, and needs NumPy only:

    PYTHONPATH=build/python python3
    >>> import dlprep_l3
    >>> image = dlprep_l3.read("photo.l3")              # (height, width, channels) uint8
    >>> data = dlprep_l3.encode(image)                  # bytes of an L3 file
    >>> dlprep_l3.write("copy.l3", image)                # the same, into a file
    >>> with dlprep_l3.BatchDecoder("auto") as decoder:  # CUDA when there is a GPU
    ...     batch = decoder.decode([data] * 8, layout="nchw-f32", mean=[123.675, 116.28, 103.53],
    ...                            std=[58.395, 57.12, 57.375], crop=224)   # (8, 3, 224, 224)
    ...     for batch in decoder.decode_batches(loader, layout="nchw-f16", crop=224):
    ...         train(batch)    # while the next batches copy and decode (depth=2 in flight)

Every failure of the library raises dlprep_l3.Error, whose message says what is wrong and, in a
batch, which image: "image 3: l3: patch 0 of channel 1: checksum mismatch". Arguments of the
wrong type or shape raise TypeError or ValueError, and a file that cannot be opened OSError, as
open() does. Arrays are HWC uint8 for one image, gray ones included (channels 1); a batch is
NHWC uint8 or NCHW float32/float16.
"""

import collections
import ctypes
import io
import json
import operator
import os
import random
import sys
import tempfile
import threading
import weakref

import numpy as np

__all__ = ["Error", "Info", "info", "decode", "read", "encode", "write", "BatchDecoder",
           "DeviceTensor", "Dataset", "webdataset_decoder"]

API_VERSION = 3


class Error(Exception):
    """A failure reported by libdlprep_l3: `status` names its kind ("corrupt_data",
    "invalid_argument", "device_unavailable", ...), str() is the library's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status

    def __reduce__(self):  # crosses process boundaries (multiprocessing, concurrent.futures)
        return (Error, (self.status, str(self)))


_STATUS_NAMES = {1: "invalid_argument", 2: "io", 3: "corrupt_data", 4: "unsupported",
                 5: "limit_exceeded", 6: "device_unavailable", 7: "device_failure",
                 8: "internal"}

Info = collections.namedtuple("Info", "width height channels patch file_bytes")
Info.__doc__ = "What an L3 header says: the image's size, its patch side, the file's bytes."


class _Info(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("channels", ctypes.c_uint32), ("patch", ctypes.c_uint32),
                ("file_bytes", ctypes.c_uint64)]


class _BatchOptions(ctypes.Structure):
    _fields_ = [("layout", ctypes.c_char_p), ("mean", ctypes.c_float * 4),
                ("std", ctypes.c_float * 4), ("crop", ctypes.c_char_p),
                ("crop_width", ctypes.c_uint32), ("crop_height", ctypes.c_uint32),
                ("seed", ctypes.c_uint64)]
    # (Not passed to C) the fewest values given per channel for mean or std, 1 when each was
    # one value or none: an image with more channels than that is refused, not left with the
    # identity on the channels past them.
    channel_values = 1


class _Window(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("channels", ctypes.c_uint32), ("crop_x", ctypes.c_uint32),
                ("crop_y", ctypes.c_uint32), ("offset_bytes", ctypes.c_uint64)]


def _load():
    path = os.environ.get("DLPREP_L3_LIBRARY") or os.path.join(os.path.dirname(__file__),
                                                               "libdlprep_l3.so")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"dlprep_l3: cannot load {path} ({e}); build dlprep (cmake --build "
                          "build) and import from build/python, or set DLPREP_L3_LIBRARY") from e
    vp, sz, u32, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint64
    pp = ctypes.POINTER(vp)
    signatures = {
        "dlprep_l3_api_version": (ctypes.c_int, []),
        "dlprep_l3_last_error": (ctypes.c_char_p, []),
        "dlprep_l3_inspect": (ctypes.c_int, [vp, sz, ctypes.POINTER(_Info)]),
        "dlprep_l3_decode": (ctypes.c_int, [vp, sz, vp, sz, sz, ctypes.c_uint]),
        "dlprep_l3_encode": (ctypes.c_int, [vp, u32, u32, u32, sz, u32, ctypes.c_uint, pp,
                                            ctypes.POINTER(sz)]),
        "dlprep_l3_free": (None, [vp]),
        "dlprep_l3_batch_options_init": (None, [ctypes.POINTER(_BatchOptions)]),
        "dlprep_l3_decoder_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint, pp]),
        "dlprep_l3_decoder_destroy": (None, [vp]),
        "dlprep_l3_decoder_device": (ctypes.c_char_p, [vp]),
        "dlprep_l3_plan_create": (ctypes.c_int, [pp, ctypes.POINTER(sz), sz,
                                                 ctypes.POINTER(_BatchOptions), pp]),
        "dlprep_l3_plan_destroy": (None, [vp]),
        "dlprep_l3_plan_count": (sz, [vp]),
        "dlprep_l3_plan_output_bytes": (u64, [vp]),
        "dlprep_l3_plan_element_bytes": (u32, [vp]),
        "dlprep_l3_plan_window": (ctypes.c_int, [vp, sz, ctypes.POINTER(_Window)]),
        "dlprep_l3_decode_batch": (ctypes.c_int, [vp, vp, pp, ctypes.POINTER(sz), sz, vp, sz]),
        "dlprep_l3_decode_batch_device": (ctypes.c_int, [vp, vp, pp, ctypes.POINTER(sz), sz,
                                                         pp]),
        "dlprep_l3_decode_batch_into_device": (ctypes.c_int, [vp, vp, pp, ctypes.POINTER(sz), sz,
                                                              vp, sz, sz]),
        "dlprep_l3_tensor_create": (ctypes.c_int, [vp, u64, pp]),
        "dlprep_l3_tensor_data": (vp, [vp]),
        "dlprep_l3_tensor_gpu": (ctypes.c_int, [vp]),
        "dlprep_l3_tensor_destroy": (None, [vp]),
        "dlprep_l3_pipeline_create": (ctypes.c_int, [vp, ctypes.c_uint, pp]),
        "dlprep_l3_pipeline_destroy": (None, [vp]),
        "dlprep_l3_pipeline_submit": (ctypes.c_int, [vp, vp, pp, ctypes.POINTER(sz), sz, vp, sz,
                                                     sz, ctypes.POINTER(u64)]),
        "dlprep_l3_pipeline_submit_kept": (ctypes.c_int, [vp, vp, pp, ctypes.POINTER(sz), sz, vp,
                                                          sz, sz, ctypes.POINTER(u64)]),
        "dlprep_l3_pipeline_wait": (ctypes.c_int, [vp, ctypes.POINTER(u64)]),
    }  # (uintptr_t, a stream, is size_t's width here: Linux)
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    if lib.dlprep_l3_api_version() != API_VERSION:
        raise ImportError(f"dlprep_l3: {path} has API version {lib.dlprep_l3_api_version()}, "
                          f"this module needs {API_VERSION}")
    return lib


_lib = _load()


def _check(status, context=""):
    """Raises the library's failure, its message after `context` ("batch 5: ")."""
    if status != 0:
        message = _lib.dlprep_l3_last_error().decode("utf-8", "replace")
        raise Error(_STATUS_NAMES.get(status, "internal"), context + message)


def _bytes_of(data):
    """A uint8 view of a bytes-like object (bytes, bytearray, memoryview, mmap, uint8 array),
    without a copy; keep it alive while the library reads it."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return np.frombuffer(data, dtype=np.uint8)


def _threads(threads):
    threads = operator.index(threads)
    if not 0 <= threads <= 4096:
        raise ValueError(f"dlprep_l3: threads must be 0 to 4096, not {threads}")
    return threads


def info(data):
    """The header of the L3 file in `data` (bytes-like), checked, as an Info; no pixel decode."""
    view = _bytes_of(data)
    result = _Info()
    _check(_lib.dlprep_l3_inspect(view.ctypes.data, view.size, ctypes.byref(result)))
    return Info(result.width, result.height, result.channels, result.patch, result.file_bytes)


def decode(data, threads=1, out=None):
    """Decodes the L3 file in `data` (bytes-like) into a (height, width, channels) uint8 array,
    checking every patch; `threads` decode patches in parallel. `out`, if given, is a uint8
    array (or CPU torch tensor) of that shape to fill (its rows may be strided, as a slice of a
    larger array)."""
    view = _bytes_of(data)
    header = info(view)
    shape = (header.height, header.width, header.channels)
    out = _host_view(out)
    if out is None:
        out = np.empty(shape, dtype=np.uint8)
    elif (not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.shape != shape
          or out.strides[1:] != (header.channels, 1)
          or out.strides[0] < header.width * header.channels or not out.flags.writeable):
        raise ValueError(f"dlprep_l3.decode: out must be a writable uint8 array of shape {shape} "
                         "whose pixels are contiguous within a row, rows top to bottom")
    room = (shape[0] - 1) * out.strides[0] + shape[1] * shape[2]
    _check(_lib.dlprep_l3_decode(view.ctypes.data, view.size, out.ctypes.data, room,
                                 out.strides[0], _threads(threads)))
    return out


def read(path, threads=1):
    """decode() of the file at `path`; an Error names the file (OSError where it cannot be read)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return decode(data, threads)
    except Error as e:
        name = f"file descriptor {path}" if isinstance(path, int) else os.fsdecode(path)
        raise Error(e.status, f"{name}: {e}") from None


def encode(image, patch=0, threads=1):
    """Encodes a uint8 array of shape (height, width) or (height, width, channels), channels 1
    to 4, into the bytes of an L3 file (lossless). `patch`: a power of two from 8 to 256, 0 for
    the automatic size (by pixel count, as `dlprep l3 encode`)."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError("dlprep_l3.encode: the image must be a uint8 array of shape (height, "
                         f"width) or (height, width, channels), not {image.dtype} {image.shape}")
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
    if max(image.shape) > 0xFFFFFFFF:
        raise Error("limit_exceeded", f"an image of shape {image.shape} is too large for L3")
    row_bytes = image.shape[1] * image.shape[2]
    # The library takes rows of contiguous pixels, top to bottom and apart (a broadcast or
    # flipped view is copied first).
    if image.strides[1:] != (image.shape[2], 1) or image.strides[0] < row_bytes:
        image = np.ascontiguousarray(image)
    patch = operator.index(patch)
    if not 0 <= patch <= 0xFFFFFFFF:  # (a C uint32_t would wrap it into another size)
        raise Error("invalid_argument", f"patch size {patch}: a power of two from 8 to 256, or 0 "
                    "for the automatic size")
    out, size = ctypes.c_void_p(), ctypes.c_size_t()
    _check(_lib.dlprep_l3_encode(image.ctypes.data, image.shape[1], image.shape[0],
                                 image.shape[2], image.strides[0], patch,
                                 _threads(threads), ctypes.byref(out), ctypes.byref(size)))
    try:
        return ctypes.string_at(out, size.value)
    finally:
        _lib.dlprep_l3_free(out)


def write(path, image, patch=0, threads=1):
    """encode() into the file at `path`, atomically: a temporary file in the same folder,
    renamed over `path` once complete (a failure leaves no file and an older one unchanged;
    an older file's permissions are kept; a symbolic link stays and its target is replaced).
    An existing path that is not a regular file (/dev/null, a FIFO) is written into, not
    replaced, as by the CLI. Like the CLI, it does not fsync."""
    data = encode(image, patch, threads)
    given = path
    path = os.path.realpath(os.fsdecode(path))  # a link stays, and its target is replaced
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        with open(path, "wb") as f:
            f.write(data)
        return
    try:
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".dlprep-",
                                         suffix=".tmp")
    except OSError as e:  # its message would name the temporary file, not the one asked for
        raise _named(e, given) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:  # a replaced file keeps its permissions; a new one gets the umask's
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as e:
        os.unlink(temporary)
        raise _named(e, given) from None
    except BaseException:
        os.unlink(temporary)
        raise


def _named(error, path):
    """`error` (an OSError about a temporary file) as the same error about `path`."""
    if error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, os.fsdecode(path))


def _umask():
    """The process's umask, read without setting it (os.umask would race other threads)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


_LAYOUT_DTYPES = {"nhwc-u8": (np.uint8, "|u1"), "nchw-f32": (np.float32, "<f4"),
                  "nchw-f16": (np.float16, "<f2")}


class _Handle:
    """Owns one C object and destroys it once, when closed or collected."""

    def __init__(self, pointer, destroy):
        self.pointer, self._destroy = pointer, destroy

    def close(self):
        if self.pointer:
            self._destroy(self.pointer)
            self.pointer = None

    def __del__(self):
        self.close()


# DLPack (dlpack.h, version 0.8's DLManagedTensor: the "dltensor" capsule every consumer takes).
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DLDeleter)]
_KDL_CUDA = 2
_DL_DTYPES = {np.dtype(np.uint8): (1, 8), np.dtype(np.float32): (2, 32),
              np.dtype(np.float16): (2, 16)}  # (kDLUInt 1 / kDLFloat 2, bits)
_DLTENSOR = b"dltensor"  # the capsule's name: its pointer must outlive the capsule
# What each exported tensor keeps alive (its struct, its shape, the DeviceTensor's memory) until
# the consumer calls the deleter, or the capsule goes unconsumed: by the struct's address.
_dlpack_exports = {}


@_DLDeleter
def _dlpack_deleter(managed):
    _dlpack_exports.pop(ctypes.addressof(managed.contents), None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _dlpack_capsule_destructor(capsule):
    # A consumer renames the capsule when it takes the tensor, and calls the deleter itself.
    if _capsule_is_valid(capsule, _DLTENSOR):
        _dlpack_deleter(ctypes.cast(_capsule_pointer(capsule, _DLTENSOR),
                                    ctypes.POINTER(_DLManagedTensor)))


# Function objects of our own (indexing makes new ones; attributes are shared with any caller
# who sets other argument types on them).
_capsule_new = ctypes.pythonapi["PyCapsule_New"]
_capsule_new.restype, _capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p,
                                                                   ctypes.c_char_p,
                                                                   ctypes.c_void_p]
_capsule_is_valid = ctypes.pythonapi["PyCapsule_IsValid"]
_capsule_is_valid.restype, _capsule_is_valid.argtypes = ctypes.c_int, [ctypes.c_void_p,
                                                                       ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.c_void_p,
                                                                         ctypes.c_char_p]


class DeviceTensor:
    """A batch tensor in GPU memory, shared without a copy through the CUDA array interface
    (torch.as_tensor(t, device="cuda"), cupy.asarray(t), numba.cuda.as_cuda_array(t)) and DLPack
    (torch.from_dlpack(t), jax.dlpack.from_dlpack(t), cupy.from_dlpack(t)). The memory is freed
    when the last object that refers to it (this one, or a tensor made from it) goes. The decode
    that made it has finished, so any stream may read it."""

    def __init__(self, owner, offset, shape, dtype, typestr):
        self._owner = owner  # the _Handle of the dlprep_l3_tensor
        self._offset = offset
        self.shape, self.dtype, self._typestr = tuple(shape), np.dtype(dtype), typestr

    @property
    def __cuda_array_interface__(self):
        base = _lib.dlprep_l3_tensor_data(self._owner.pointer)
        return {"shape": self.shape, "typestr": self._typestr, "data": (base + self._offset, False),
                "version": 3, "strides": None, "stream": None}

    def __dlpack_device__(self):
        return (_KDL_CUDA, _lib.dlprep_l3_tensor_gpu(self._owner.pointer))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the tensor (row-major, no copy). `stream` needs no wait: the
        tensor is complete. A copy or another device is refused (BufferError), as DLPack asks."""
        if copy or (dl_device is not None and tuple(dl_device) != self.__dlpack_device__()):
            raise BufferError("dlprep_l3.DeviceTensor: DLPack export without a copy, on its "
                              "own GPU only")
        managed = _DLManagedTensor()
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        code, bits = _DL_DTYPES[self.dtype]
        device_type, device_id = self.__dlpack_device__()
        # The first element itself as `data` (byte_offset 0), as NumPy exports a view: some
        # consumers ignore byte_offset.
        managed.dl_tensor = _DLTensor(
            _lib.dlprep_l3_tensor_data(self._owner.pointer) + self._offset,
            _DLDevice(device_type, device_id), len(self.shape), _DLDataType(code, bits, 1),
            ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
        managed.deleter = _dlpack_deleter
        address = ctypes.addressof(managed)
        _dlpack_exports[address] = (managed, shape, self._owner)
        return _capsule_new(address, _DLTENSOR, ctypes.cast(_dlpack_capsule_destructor,
                                                            ctypes.c_void_p))

    def __repr__(self):
        return f"DeviceTensor(shape={self.shape}, dtype={self.dtype})"


# Every decoder's lock is new in a forked child (a DataLoader worker): a thread of the parent
# that held one at the fork does not exist there to release it.
_decoders = weakref.WeakSet()


def _new_locks_after_fork():
    for decoder in list(_decoders):
        decoder._lock = threading.Lock()


os.register_at_fork(after_in_child=_new_locks_after_fork)


def _stream_of(array, interface):
    """The stream on which the array's last work was queued, that a writer must wait for: the
    one its CUDA array interface names (version 3; CuPy, Numba), else for a torch tensor (whose
    interface is version 2, without one) PyTorch's current stream on its GPU; 0 for none."""
    if "stream" not in interface:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(array, torch.Tensor) and array.is_cuda:
            return torch.cuda.current_stream(array.device).cuda_stream or 1  # 0: the legacy one
        return 0
    stream = interface["stream"]
    if stream is None:
        return 0
    stream = operator.index(stream)
    if stream == 0:
        raise ValueError("dlprep_l3: the array's __cuda_array_interface__ names stream 0, which "
                         "the interface disallows (1 is the legacy default stream)")
    if not 0 < stream < 2**64:
        raise ValueError(f"dlprep_l3: the array's __cuda_array_interface__ names stream {stream}")
    return stream


def _device_memory_of(array):
    """The address, shape, typestr and stream (_stream_of) of a contiguous, writable GPU array
    (the CUDA array interface, versions 2 and 3)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        raise ValueError("dlprep_l3: out for output='device' must be a GPU array (a torch.cuda "
                         "tensor, a CuPy array: one with the CUDA array interface)")
    shape, itemsize = tuple(interface["shape"]), np.dtype(interface["typestr"]).itemsize
    contiguous = [itemsize]
    for side in reversed(shape[1:]):
        contiguous.insert(0, contiguous[0] * side)
    pointer, read_only = interface["data"]
    if read_only or interface.get("mask") is not None or (
            interface.get("strides") is not None and tuple(interface["strides"]) != tuple(
                contiguous) and int(np.prod(shape)) > 1):
        raise ValueError("dlprep_l3: out must be a contiguous, writable GPU array without a mask")
    return pointer, shape, np.dtype(interface["typestr"]).str, _stream_of(array, interface)


_END, _FAILED = object(), object()


def _check_layout(layout):
    if layout not in _LAYOUT_DTYPES:
        raise Error("invalid_argument", f"unknown layout '{layout}' (nhwc-u8, nchw-f32, nchw-f16)")


def _file_view(data, index, context):
    """_bytes_of() of a batch's file; a TypeError names the image, and the likely mistake."""
    try:
        return _bytes_of(data)
    except TypeError as e:
        hint = (" (files are the bytes of L3 files, not paths: open(path, 'rb').read())"
                if isinstance(data, (str, os.PathLike)) else
                " (a batch of (files, targets) pairs? decode_batches takes them with targets=True)"
                if isinstance(data, (list, tuple)) else "")
        raise TypeError(f"dlprep_l3: {context}image {index}: {e}{hint}") from None


class _Batch:
    """A batch's files, checked and planned: the plan, the C arrays of the files (whose views
    keep their memory alive), whether they are all immutable (bytes), each image's window and
    the tensor's bytes."""

    def __init__(self, files, options, context=""):
        if isinstance(files, (bytes, bytearray, memoryview)) or (
                isinstance(files, np.ndarray) and files.dtype != object):
            raise TypeError("dlprep_l3: files is a sequence of L3 files (a list of bytes), not "
                            "one file")
        files = list(files)
        self.views = [_file_view(f, i, context) for i, f in enumerate(files)]
        self.immutable = all(type(f) is bytes for f in files)  # (a subclass could be mutable)
        self.count = len(self.views)
        self.pointers = (ctypes.c_void_p * max(self.count, 1))(
            *[v.ctypes.data for v in self.views])
        self.sizes = (ctypes.c_size_t * max(self.count, 1))(*[v.size for v in self.views])
        plan = ctypes.c_void_p()
        _check(_lib.dlprep_l3_plan_create(self.pointers, self.sizes, self.count,
                                          ctypes.byref(options), ctypes.byref(plan)), context)
        self.plan = _Handle(plan.value, _lib.dlprep_l3_plan_destroy)
        try:
            self.windows = []
            for i in range(self.count):
                window = _Window()
                _check(_lib.dlprep_l3_plan_window(self.plan.pointer, i, ctypes.byref(window)))
                self.windows.append(window)
                if 1 < options.channel_values < window.channels:
                    raise Error("invalid_argument", f"{context}image {i} has {window.channels} "
                                f"channels, and mean or std {options.channel_values} values: "
                                "give one value for every channel, or one per channel")
            self.total = _lib.dlprep_l3_plan_output_bytes(self.plan.pointer)
        except BaseException:
            self.plan.close()
            raise

    def close(self):
        self.plan.close()


def _tensor_shape(batch, layout, make):
    """make(offset, shape, dtype, typestr) of the batch: one (N, ...) tensor when every window
    has the same shape, else a list of N."""
    dtype, typestr = _LAYOUT_DTYPES[layout]

    def window_shape(w):
        if layout == "nhwc-u8":
            return (w.height, w.width, w.channels)
        return (w.channels, w.height, w.width)

    shapes = [window_shape(w) for w in batch.windows]
    if shapes and all(s == shapes[0] for s in shapes):
        return make(batch.windows[0].offset_bytes, (len(shapes),) + shapes[0], dtype, typestr)
    return [make(w.offset_bytes, s, dtype, typestr) for w, s in zip(batch.windows, shapes)]


def _device_tensors(owner, batch, layout):
    return _tensor_shape(batch, layout, lambda offset, shape, dtype, typestr:
                         DeviceTensor(owner, offset, shape, dtype, typestr))


def _host_arrays(buffer, batch, layout):
    return _tensor_shape(batch, layout, lambda offset, shape, dtype, typestr:
                         buffer[offset:].view(dtype)[:int(np.prod(shape))].reshape(shape))


def _host_view(array):
    """A NumPy view of host memory to decode into: the array itself, or a CPU torch tensor's
    memory (pinned or not, as .numpy() shares it); anything else as it is. The view is
    writable even where the tensor's memory is not (torch.frombuffer of bytes, a read-only
    mapping): such tensors are the caller's to keep out, as torch's own in-place ops do."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor) and array.device.type == "cpu":
        try:
            return array.numpy()
        except (RuntimeError, TypeError) as e:  # requires_grad, bfloat16
            raise ValueError(f"dlprep_l3: out is a torch tensor NumPy cannot view: {e}") from None
    return array


def _memory_of(array, device):
    """The address, shape, typestr and stream (0: none) of memory to decode into: a GPU array
    (`device`) or a C-contiguous writable host array (_host_view)."""
    if device:
        return _device_memory_of(array)
    view = _host_view(array)
    if isinstance(view, np.ndarray) and view.flags.c_contiguous and view.flags.writeable:
        return view.ctypes.data, view.shape, view.dtype.str, 0
    raise ValueError("dlprep_l3: out for the CPU backend must be C-contiguous writable NumPy "
                     "arrays or CPU torch tensors")


def _memory_for_batch(array, batch, layout, device):
    """The address and stream of `array` (_memory_of), the memory a batch is decoded into, and
    the result: `array` of the batch's shape and dtype, or its first images when it has room
    for more (the last, short batch of an epoch)."""
    expected = _tensor_shape(batch, layout, lambda offset, shape, dtype, typestr:
                             (shape, typestr))
    if isinstance(expected, list):
        raise ValueError("dlprep_l3: out needs a batch whose images all have one shape (size, "
                         "or crop, and channel count); this one has several")
    pointer, shape, typestr, stream = _memory_of(array, device)
    (count, *image), want = expected[0], expected[1]
    if typestr != want or len(shape) != len(expected[0]) or list(shape[1:]) != image or \
            shape[0] < count:
        raise ValueError(f"dlprep_l3: out is {typestr} {tuple(shape)}; the batch is {want} "
                         f"{expected[0]} (out may have room for more images)")
    if shape[0] == count:
        return pointer, stream, array
    if isinstance(array, DeviceTensor):  # (no slicing: a framework's tensor has it)
        raise ValueError(f"dlprep_l3: out is a DeviceTensor of {shape[0]} images for a batch of "
                         f"{count}; wrap it first (torch.as_tensor) to take its first images")
    return pointer, stream, array[:count]


def _check_distinct(arrays, device):
    """Refuses arrays whose memory overlaps: each batch of a ring needs its own."""
    spans = []
    for array in arrays:
        pointer, shape, typestr, _ = _memory_of(array, device)
        spans.append((pointer, pointer + int(np.prod(shape)) * np.dtype(typestr).itemsize))
    spans.sort()
    if any(end > start for (_, end), (start, _) in zip(spans, spans[1:])):
        raise ValueError("dlprep_l3: the arrays of out share memory; each needs its own")


class BatchDecoder:
    """Decodes batches of L3 files into one tensor. `device`: "auto" (CUDA when dlprep was built
    with it and a GPU is present, else the CPU), "cpu" or "cuda"; the environment variable
    DLPREP_FORCE_DEVICE=cpu|cuda overrides it. `threads`: the CPU backend's threads. One batch
    at a time per decoder; .device says which backend runs. A CUDA decoder runs on the GPU
    current when it is made, and only while that GPU is current (torch.cuda.set_device)."""

    def __init__(self, device="auto", threads=1):
        if not isinstance(device, str):
            raise TypeError(f"dlprep_l3: device must be a str, not {type(device).__name__}")
        pointer = ctypes.c_void_p()
        _check(_lib.dlprep_l3_decoder_create(device.encode(), _threads(threads),
                                             ctypes.byref(pointer)))
        self._handle = _Handle(pointer.value, _lib.dlprep_l3_decoder_destroy)
        self.device = _lib.dlprep_l3_decoder_device(self._handle.pointer).decode()
        # The library releases the GIL while it decodes: calls from several threads take turns
        # (a decoder's buffers, and its CUDA stream, serve one batch at a time), and close()
        # waits for the batch in progress.
        self._lock = threading.Lock()
        _decoders.add(self)

    def close(self):
        """Frees the decoder's memory now (tensors it returned stay valid; the batches in flight
        of a decode_batches() generator finish, and its next one raises Error)."""
        with self._lock:
            self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def decode(self, files, layout="nhwc-u8", mean=None, std=None, crop=None,
               crop_mode="center", seed=None, output="host", out=None):
        """Decodes `files` (bytes-like L3 files) into one tensor.

        layout: "nhwc-u8" (N, H, W, C) uint8, "nchw-f32" (N, C, H, W) float32 or "nchw-f16"
            (N, C, H, W) float16, whose elements are (x - mean[c]) / std[c].
        mean, std: one value for every channel, or one per channel (up to 4; an image with
            more channels than values is refused), float layouts only, in the units of the
            pixels (0 to 255): ImageNet's are mean=[123.675, 116.28, 103.53], std=[58.395,
            57.12, 57.375].
        crop: None (whole images), (height, width) (the order of torchvision and DALI), or one
            side for a square; cut at the centre ("center": the offsets (H - h) // 2 and
            (W - w) // 2, rounded down, where torchvision's CenterCrop rounds to nearest, so
            that an odd margin may put the window one pixel apart) or at random ("random"): at
            places drawn anew for every call, or from `seed` when one is given (the same seed
            cuts the same windows on every device and every run).
        output: "host" for a NumPy array, "device" for a DeviceTensor in GPU memory (CUDA only).
        out: memory to decode into, reused from batch to batch (a new tensor of a big batch
            costs its allocation every time): with output="host" a C-contiguous writable NumPy
            array or CPU torch tensor (pinned, for a later .cuda(non_blocking=True)) of at least
            the tensor's bytes, of the layout's dtype or uint8, and the result is a NumPy view
            of its memory; with output="device" a contiguous GPU array on the decoder's GPU (a
            torch.cuda tensor, a CuPy array: anything with the CUDA array interface) of the
            batch's shape and dtype, or with room for more images (the first axis longer: the
            last, short batch of an epoch), and the result is `out` (or out[:n]), complete. The
            decode waits for the work queued so far on the array's stream: the one its interface
            names (CuPy, Numba), or for a torch tensor PyTorch's current stream; so a tensor
            still in use there may be passed. Work on other streams must be done with it
            (torch.cuda.synchronize() first, if it may not be).

        Images of different sizes (without a crop) give a list of arrays, one per image, that
        share one buffer. Every patch that is decoded is checked (with a crop, those the
        window reaches); the first damaged one raises Error naming its image. From host files,
        the CUDA backend copies them to pinned memory and the GPU in one transfer;
        decode_batches() overlaps that with the decode of other batches."""
        _check_layout(layout)
        if output not in ("host", "device"):
            raise Error("invalid_argument", f"unknown output '{output}' (host, device)")
        if output == "device" and self.device != "cuda":
            raise Error("device_unavailable", "output='device' needs the CUDA backend; this "
                        f"decoder runs on the {self.device}")
        options = self._options(layout, mean, std, crop, crop_mode, seed)
        with self._lock:
            self._require_open()
            batch = _Batch(files, options)
            try:
                return self._decode(batch, layout, output, out)
            finally:
                batch.close()

    def _require_open(self):
        if not self._handle.pointer:
            raise Error("invalid_argument", "the decoder is closed")

    def _decode(self, batch, layout, output, out):
        decoder = self._handle.pointer
        if output == "device" and out is not None:
            if not batch.windows:
                return out
            pointer, stream, result = _memory_for_batch(out, batch, layout, device=True)
            _check(_lib.dlprep_l3_decode_batch_into_device(
                decoder, batch.plan.pointer, batch.pointers, batch.sizes, batch.count, pointer,
                batch.total, stream))
            return result
        if output == "device":
            tensor = ctypes.c_void_p()
            _check(_lib.dlprep_l3_decode_batch_device(decoder, batch.plan.pointer, batch.pointers,
                                                      batch.sizes, batch.count,
                                                      ctypes.byref(tensor)))
            return _device_tensors(_Handle(tensor.value, _lib.dlprep_l3_tensor_destroy), batch,
                                   layout)
        out = _host_view(out)
        if out is None:
            buffer = np.empty(batch.total, dtype=np.uint8)
        elif (not isinstance(out, np.ndarray) or not out.flags.c_contiguous
              or not out.flags.writeable or out.nbytes < batch.total):
            raise ValueError(f"dlprep_l3: out must be a C-contiguous writable array of at "
                             f"least {batch.total} bytes")
        elif out.dtype not in (np.uint8, np.dtype(_LAYOUT_DTYPES[layout][0])):
            raise ValueError(f"dlprep_l3: out is {out.dtype}, and the {layout} batch "
                             f"{np.dtype(_LAYOUT_DTYPES[layout][0])}: give an array of that "
                             "dtype, or uint8 bytes")
        else:
            buffer = out.reshape(-1).view(np.uint8)
        _check(_lib.dlprep_l3_decode_batch(decoder, batch.plan.pointer, batch.pointers,
                                           batch.sizes, batch.count, buffer.ctypes.data,
                                           batch.total))
        return _host_arrays(buffer, batch, layout)

    def decode_batches(self, batches, layout="nhwc-u8", mean=None, std=None, crop=None,
                       crop_mode="center", seed=None, depth=2, out=None, targets=False):
        """Decodes an iterable of batches (each a sequence of L3 files, as decode() takes) and
        yields their tensors in order, with `depth` batches (1 to 16) in flight: while the
        caller uses one, the files of the next go to the GPU through pinned memory and decode
        (the copy of one batch overlaps the decode of another); with the CPU backend they
        decode on a worker thread, which the Python thread does not hold up (no GIL held). A
        generator: the files of a batch are read from `batches` when it is submitted, `depth`
        ahead of the one yielded.

        The tensors lie in the decoder's memory: a DeviceTensor with CUDA, a NumPy array with
        the CPU backend (torch.as_tensor(batch, device="cuda") takes either); with images of
        different sizes, a list as decode() gives. Options as for decode(); random crops draw
        new windows for every batch, from seed + k for batch k when a seed is given.

        out: instead of a new tensor per batch, a list of at least depth + 1 arrays that do not
            share memory, each of the batch's shape and dtype or with room for more images (as
            decode()'s), decoded into in turn: batch k into out[k % len(out)], which (or its
            first n images) is what is yielded. GPU arrays with the CUDA array interface (CUDA),
            or C-contiguous NumPy arrays or CPU torch tensors (CPU backend). An array is decoded
            into again once the generator has been resumed past the batch it held, after the
            work queued by then on its stream, as decode()'s out. With CUDA, prefer it for
            training: a new tensor costs a cudaMalloc, and freeing it a cudaFree, which waits
            for the whole GPU.

        targets: each element of `batches` is a pair (files, targets), as torch's DataLoader
            collates items (bytes, target) (Dataset(root, decode=False)), and the generator
            yields (tensor, targets), the targets as they came:
                loader = DataLoader(Dataset("ds/", decode=False), batch_size=256,
                                    num_workers=8, shuffle=True)
                for images, labels in decoder.decode_batches(loader, targets=True, ...):

        A damaged batch, a batch that cannot be submitted or an error of `batches` itself raises
        Error (or that error) in its turn, after the batches before it ("batch 5: image 3:
        ..."), and ends the generator. Its close() (or dropping it) waits for the batches in
        flight; a loop left with break leaves them running while the generator lives. Closing
        the decoder ends the batches too: the next one to be submitted raises Error."""
        _check_layout(layout)
        depth = operator.index(depth)
        if not 1 <= depth <= 16:
            raise Error("invalid_argument", f"depth {depth}: 1 to 16 batches in flight")
        if out is not None:
            out = list(out)
            if len(out) < depth + 1:
                raise ValueError(f"dlprep_l3: out needs at least depth + 1 = {depth + 1} arrays "
                                 f"(one per batch in flight and the one yielded), not {len(out)}")
            _check_distinct(out, device=self.device == "cuda")
        if seed is not None:
            seed = operator.index(seed)

        def options_of(k):
            return self._options(layout, mean, std, crop, crop_mode,
                                 None if seed is None else (seed + k) % 2**64)

        options_of(0)  # argument errors now, not at the first batch
        with self._lock:
            self._require_open()
            pointer = ctypes.c_void_p()
            _check(_lib.dlprep_l3_pipeline_create(self._handle.pointer, depth,
                                                  ctypes.byref(pointer)))
        pipeline = _Handle(pointer.value, _lib.dlprep_l3_pipeline_destroy)
        return self._pipelined(iter(batches), layout, options_of, depth, out, bool(targets),
                               pipeline)

    def _pipelined(self, batches, layout, options_of, depth, ring, with_targets, pipeline):
        pending = collections.deque()  # (k, targets, result, submitted), oldest first
        lent = {}  # k: the files of batch k lent to the library, until its wait
        count = 0

        def fill():  # up to `depth` batches in flight
            nonlocal count
            while len(pending) < depth and not (pending and pending[-1][2] is _FAILED):
                try:
                    item = next(batches, _END)
                    if item is _END:
                        return
                    files, targets = item, None
                    if with_targets:
                        try:
                            files, targets = item
                        except (TypeError, ValueError):
                            raise TypeError(f"dlprep_l3: batch {count}: with targets=True each "
                                            "batch is a pair (files, targets)") from None
                    target = None if ring is None else ring[count % len(ring)]
                    pending.append((count, targets) + self._submit(
                        pipeline, files, layout, options_of(count), target, count, lent))
                except Exception as e:  # raised in its turn: the batches before it come first
                    pending.append((count, e, _FAILED, False))
                count += 1

        try:
            fill()
            while pending:
                k, targets, result, submitted = pending.popleft()
                if result is _FAILED:
                    raise targets
                if submitted:
                    ticket = ctypes.c_uint64()
                    _check(_lib.dlprep_l3_pipeline_wait(pipeline.pointer, ctypes.byref(ticket)),
                           f"batch {k}: ")
                    lent.pop(k, None)  # its files were read: they may go
                fill()  # `depth` in flight again while the caller works on batch k
                yield (result, targets) if with_targets else result
        finally:
            pipeline.close()  # waits for the batches in flight

    def _submit(self, pipeline, files, layout, options, target, k, lent):
        """Starts batch `k` in `pipeline`, into `target` (or a new tensor); returns its result
        and whether it went through the pipeline (an empty batch does not). Files lent to the
        library rather than copied are held in lent[k] from before the call: the caller drops
        them after the batch's wait, or after the pipeline's close (which waits too)."""
        with self._lock:  # close() ends the batches, in every mode
            if not self._handle.pointer:
                raise Error("invalid_argument", f"batch {k}: the decoder is closed")
        batch = _Batch(files, options, f"batch {k}: ")
        try:
            if not batch.windows:
                return [], False
            on_device = self.device == "cuda"
            if target is not None:
                pointer, stream, result = _memory_for_batch(target, batch, layout,
                                                            device=on_device)
            elif on_device:
                tensor = ctypes.c_void_p()
                with self._lock:  # the decoder's memory: it must not be closed meanwhile
                    self._require_open()
                    _check(_lib.dlprep_l3_tensor_create(self._handle.pointer, batch.total,
                                                        ctypes.byref(tensor)))
                owner = _Handle(tensor.value, _lib.dlprep_l3_tensor_destroy)
                pointer, stream = _lib.dlprep_l3_tensor_data(owner.pointer), 0
                result = _device_tensors(owner, batch, layout)
            else:
                buffer = np.empty(batch.total, dtype=np.uint8)
                pointer, stream = buffer.ctypes.data, 0
                result = _host_arrays(buffer, batch, layout)
            # Immutable files are lent until the wait (no copy on the CPU backend); others, which
            # the caller may reuse for the next batch, are copied by the submit.
            submit = _lib.dlprep_l3_pipeline_submit
            if batch.immutable:
                lent[k] = batch.views
                submit = _lib.dlprep_l3_pipeline_submit_kept
            ticket = ctypes.c_uint64()
            _check(submit(pipeline.pointer, batch.plan.pointer, batch.pointers, batch.sizes,
                          batch.count, pointer, batch.total, stream, ctypes.byref(ticket)),
                   f"batch {k}: ")
            return result, True
        finally:
            batch.close()  # the pipeline holds the plan

    def _options(self, layout, mean, std, crop, crop_mode, seed):
        options = _BatchOptions()
        _lib.dlprep_l3_batch_options_init(ctypes.byref(options))
        options.layout = layout.encode()
        for name, values in (("mean", mean), ("std", std)):
            if values is None:
                continue
            values = [float(v) for v in np.atleast_1d(values)]
            if not 1 <= len(values) <= 4:
                raise Error("invalid_argument", f"{name} has {len(values)} values; 1 to 4, one "
                            "per channel")
            if len(values) == 1:
                values *= 4
            elif options.channel_values == 1 or len(values) < options.channel_values:
                options.channel_values = len(values)
            target = getattr(options, name)
            for c, v in enumerate(values):
                target[c] = v
        if crop is None and crop_mode != "center":
            raise Error("invalid_argument", f"crop_mode '{crop_mode}' without a crop")
        if crop is not None:
            height, width = (crop, crop) if np.ndim(crop) == 0 else crop
            height, width = operator.index(height), operator.index(width)
            if not (0 < height <= 65535 and 0 < width <= 65535):
                raise Error("invalid_argument", f"crop ({height}, {width}): each side 1 to 65535")
            if crop_mode not in ("center", "random"):
                raise Error("invalid_argument", f"unknown crop_mode '{crop_mode}' (center, "
                            "random)")
            options.crop = crop_mode.encode()
            options.crop_width, options.crop_height = width, height
            options.seed = random.getrandbits(64) if seed is None else operator.index(seed) % 2**64
        return options


# The formats convert-dataset writes, and Pillow's name for each of the others.
_PIL_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "bmp": "BMP", "ppm": "PPM"}


class Dataset:
    """A dataset made by `dlprep convert-dataset`, either layout, as a map-style dataset for
    torch.utils.data.DataLoader, as torchvision's ImageFolder: dataset[i] is (image, target),
    the image a (height, width, channels) uint8 array (L3 samples decoded by this module, the
    others by Pillow) and the target the class index of the sample's label (its place in
    .classes, the sorted labels without ""; -1 for a sample without one). `transform` and
    `target_transform` are applied to them when given.

    A --shard part's own classes may lack a class of the whole dataset, which would shift the
    indices: the tar layout records the whole list (tar.labels), and a files-layout part needs
    `classes`, the whole dataset's labels (or merge the parts first; the parts' lists joined
    serve: a label given twice counts once). `classes` also overrides the list of a whole
    dataset, and must hold every label of its samples. The index (samples.jsonl) is read once,
    at construction; each item opens its file (or tar shard) and reads its bytes alone.
    `threads` decode the patches of one L3 sample in parallel, as decode()'s.

    decode=False gives each sample's file as bytes instead of its pixels (transform, if given,
    is applied to them), for the GPU: DataLoader's workers then only read, and the batches go
    to BatchDecoder.decode_batches(loader, targets=True), which takes L3 samples only (an
    L3-only dataset: convert-dataset --format l3)."""

    def __init__(self, root, transform=None, target_transform=None, threads=1, classes=None,
                 decode=True):
        self.root, self.transform, self.target_transform = root, transform, target_transform
        self._decode = bool(decode)
        self._threads = _threads(threads)
        self._data = os.path.realpath(os.path.join(root, "data"))
        manifest_path = os.path.join(root, "dataset.json")
        try:
            with open(manifest_path, encoding="utf-8") as f:
                manifest = json.load(f)
            if not isinstance(manifest, dict) or manifest.get("schema") != "dlprep.dataset/1":
                raise ValueError("no dlprep.dataset/1 schema")
            recorded = manifest.get("classes", {})
            tar = manifest.get("tar") or {}
            if not isinstance(recorded, dict) or not isinstance(tar, dict):
                raise ValueError("classes or tar is not an object")
            parts = (manifest.get("parameters") or {}).get("shard_count", 1)
        except (OSError, ValueError, AttributeError) as e:
            raise Error("corrupt_data", f"{manifest_path}: not a dlprep dataset.json ({e})") \
                from None
        if manifest.get("complete") is not True:
            raise Error("invalid_argument", f"{manifest_path}: the dataset is incomplete (a "
                        "conversion did not finish): run dlprep convert-dataset again")
        if classes is not None:
            if isinstance(classes, (str, bytes)):
                raise TypeError("dlprep_l3.Dataset: classes is a list of labels, not one string")
            self.classes = sorted({os.fsdecode(c) if isinstance(c, bytes) else str(c)
                                   for c in classes if c})  # parts' lists, joined
        elif "labels" in tar:
            self.classes = [str(c) for c in tar["labels"]]
        elif parts != 1:
            raise Error("invalid_argument", f"{root}: one --shard part of {parts}, whose classes "
                        "may lack some of the whole dataset's: pass classes= (the whole "
                        "dataset's labels), or read the merged dataset")
        else:
            self.classes = sorted(k for k in recorded if k)
        self.class_to_idx = {label: i for i, label in enumerate(self.classes)}
        self._tar = manifest.get("layout") == "tar"
        self._read_index(os.path.join(root, "samples.jsonl"), classes is not None)

    def _read_index(self, index_path, classes_given):
        codes = {name: code for code, name in enumerate(["l3"] + list(_PIL_FORMATS))}
        self._format_names = list(codes)
        unique, locations, offsets, sizes, formats, targets = {}, [], [], [], [], []
        number = 0
        try:
            with open(index_path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    r = json.loads(line)
                    location, size = r["location"], r["bytes"]
                    offset = r["offset"] if self._tar else r.get("offset", 0)
                    parts = location.split("/")
                    if parts[0] != "data" or len(parts) < 2 or {"..", ".", ""} & set(parts[1:]):
                        raise ValueError(f"location {location!r} is not in data/")
                    if not (type(offset) is int and type(size) is int and 0 <= offset < 2**62
                            and 0 <= size < 2**62):
                        raise ValueError("offset and bytes must be whole numbers >= 0")
                    if r["format"] not in codes:
                        raise ValueError(f"format {r['format']!r} is none dlprep writes")
                    label = r["label"]
                    if not isinstance(label, str):
                        raise ValueError("the label is no string")
                    if label and label not in self.class_to_idx and classes_given:
                        raise Error("invalid_argument", f"{index_path}: line {number}: label "
                                    f"{label!r} is not in classes= (give the whole dataset's "
                                    "labels)")
                    locations.append(unique.setdefault(location, len(unique)))
                    offsets.append(offset)
                    sizes.append(size)
                    formats.append(codes[r["format"]])
                    targets.append(self.class_to_idx[label] if label else -1)
        except OSError as e:
            raise Error("io", f"{index_path}: {e.strerror or e}") from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            # (bytes that are no UTF-8 fail before their line is counted)
            line = number + 1 if isinstance(e, UnicodeDecodeError) else number
            raise Error("corrupt_data", f"{index_path}: line {line}: {e!r}: run dlprep dataset "
                        "verify") from None
        # NumPy arrays, not lists of Python objects: forked DataLoader workers share them.
        self._files = list(unique)
        self._location = np.asarray(locations, dtype=np.int64)
        self._offset = np.asarray(offsets, dtype=np.int64)
        self._size = np.asarray(sizes, dtype=np.int64)
        self._format = np.asarray(formats, dtype=np.int8)
        self.targets = np.asarray(targets, dtype=np.int64)

    def __len__(self):
        return len(self._location)

    def __getitem__(self, index):
        path = os.path.join(self.root, self._files[self._location[index]])
        offset, size = int(self._offset[index]), int(self._size[index])
        fmt = self._format_names[self._format[index]]
        try:
            real = os.path.realpath(path)
            if os.path.commonpath([real, self._data]) != self._data or not os.path.isfile(real):
                raise Error("corrupt_data", "not a file in the dataset's data/")
            if offset + size > os.path.getsize(real):
                raise Error("corrupt_data", f"bytes {offset}+{size} past the end of the file")
            with open(real, "rb") as f:
                f.seek(offset)
                data = f.read(size)
            if len(data) != size:
                raise Error("corrupt_data", f"bytes {offset}+{size}: the file ended early")
            if not self._decode:
                image = data
            elif fmt == "l3":
                image = decode(data, self._threads)
            else:
                from PIL import Image  # the other formats (Debian's python3-pil)
                image = np.asarray(Image.open(io.BytesIO(data), formats=[_PIL_FORMATS[fmt]]))
                if image.dtype != np.uint8:
                    raise Error("unsupported", f"{image.dtype} pixels, not 8-bit")
                if image.ndim == 2:
                    image = image[:, :, np.newaxis]
        except Error as e:
            raise Error(e.status, f"{path}: sample {index}: {e}: run dlprep dataset verify") \
                from None
        except OSError as e:
            raise Error("io", f"{path}: sample {index}: {e.strerror or e}") from None
        except Exception as e:  # Pillow's own errors on bad bytes
            raise Error("corrupt_data", f"{path}: sample {index}: {fmt}: {e}") from None
        target = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


def webdataset_decoder(key, data):
    """A handler for WebDataset's .decode(): an "l3" member (key "l3" or "*.l3") becomes a
    (height, width, channels) uint8 array; any other key is left to the next handler.
        dataset = webdataset.WebDataset(urls).decode(dlprep_l3.webdataset_decoder, "rgb")"""
    if key.lower().rsplit(".", 1)[-1] != "l3":
        return None
    return decode(data)
