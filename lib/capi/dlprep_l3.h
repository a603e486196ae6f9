/* The C interface of libdlprep_l3.so: L3 files to pixels and batch tensors, and pixels to L3,
 * for programs that are not C++ (the Python module python/dlprep_l3 loads it with ctypes).
 * A thin shell over lib/l3 (l3.hpp, batch_decode.hpp): the same checks, the same errors, the
 * same bytes as `dlprep l3 decode`. Documented in man/libdlprep_l3.3.
 *
 * Every function that can fail returns a dlprep_status; on failure, dlprep_l3_last_error()
 * says what was wrong (the calling thread's last failure). Nothing here prints, exits, aborts or
 * lets a C++ exception through. Functions are thread-safe, except that a decoder or a device
 * tensor must not be used by two threads at once. */
#ifndef DLPREP_L3_H
#define DLPREP_L3_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a declaration below changes; callers check it before they call anything else. */
#define DLPREP_L3_API_VERSION 3

/* The kinds of failure: dlprep's error kinds (lib/core/error.hpp), in the order of the CLI's
 * exit-status mapping. */
typedef enum dlprep_status {
  DLPREP_OK = 0,
  DLPREP_INVALID_ARGUMENT = 1,   /* a bad option, a null pointer, a buffer too small */
  DLPREP_IO = 2,                 /* a read or write failed */
  DLPREP_CORRUPT_DATA = 3,       /* malformed, truncated or failing a checksum */
  DLPREP_UNSUPPORTED = 4,        /* valid, but not handled by this build (a newer L3 version) */
  DLPREP_LIMIT_EXCEEDED = 5,     /* larger than a documented limit */
  DLPREP_DEVICE_UNAVAILABLE = 6, /* CUDA asked for, but not built in or no device */
  DLPREP_DEVICE_FAILURE = 7,     /* the device failed while running (out of memory included) */
  DLPREP_INTERNAL = 8,           /* a bug in dlprep, or host memory exhausted */
} dlprep_status;

/* DLPREP_L3_API_VERSION of the library that was loaded. */
int dlprep_l3_api_version(void);

/* The calling thread's last failure: "l3: patch 3 of channel 1: checksum mismatch". Valid until
 * the thread's next call into this library; "" when nothing failed yet. */
const char* dlprep_l3_last_error(void);

/* What an L3 header says. */
typedef struct dlprep_l3_info {
  uint32_t width, height, channels; /* channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA */
  uint32_t patch;                   /* patch side in pixels */
  uint64_t file_bytes;              /* the file's size as its header declares it */
} dlprep_l3_info;

/* Validates the header and offset tables of the `size` bytes at `file` (no pixel decode). */
dlprep_status dlprep_l3_inspect(const void* file, size_t size, dlprep_l3_info* info);

/* Decodes a whole file into `out`: height rows of width x channels bytes (HWC, uint8), each row
 * `row_stride` bytes after the last (0: rows back to back). `out_size` is the room at `out`.
 * Every patch's checks run before the call returns; on failure `out` holds garbage.
 * `threads` (0 = 1, at most 4096) decode patches in parallel. */
dlprep_status dlprep_l3_decode(const void* file, size_t size, void* out, size_t out_size,
                               size_t row_stride, unsigned threads);

/* Encodes an 8-bit HWC image of 1-4 channels losslessly (rows `row_stride` bytes apart; 0 =
 * back to back). `patch` is a power of two from 8 to 256, 0 for the automatic size; `threads`
 * as for dlprep_l3_decode(). On success
 * *out holds *out_size bytes that the caller frees with dlprep_l3_free(). */
dlprep_status dlprep_l3_encode(const void* pixels, uint32_t width, uint32_t height,
                               uint32_t channels, size_t row_stride, uint32_t patch,
                               unsigned threads, void** out, size_t* out_size);

/* Frees what dlprep_l3_encode() returned; null is ignored. */
void dlprep_l3_free(void* bytes);

/* ---- Batches: many files into one tensor (man/dlprep-l3.1, BATCH TENSORS) ---- */

/* How a batch is laid out. Fill it with dlprep_l3_batch_options_init() first. */
typedef struct dlprep_l3_batch_options {
  const char* layout; /* "nhwc-u8" (default), "nchw-f32", "nchw-f16" */
  float mean[4];      /* float layouts: element = (x - mean[c]) * (1 / std[c]) */
  float std[4];
  const char* crop; /* "none" (default: whole images), "center", "random" */
  uint32_t crop_width, crop_height;
  uint64_t seed; /* "random" crops: the same seed cuts the same windows */
} dlprep_l3_batch_options;

/* The defaults: nhwc-u8, mean 0, std 1, no crop, seed 0. */
void dlprep_l3_batch_options_init(dlprep_l3_batch_options* options);

/* A batch decoder on one device; one thread at a time. */
typedef struct dlprep_l3_decoder dlprep_l3_decoder;

/* `device`: "auto" (CUDA when built in and a GPU is present, else the CPU), "cpu" or "cuda";
 * the environment variable DLPREP_FORCE_DEVICE=cpu|cuda overrides it, as for the CLI. A CUDA
 * decoder runs on the GPU current when it is made, and refuses calls while another is.
 * `cpu_threads` (0 = 1, at most 4096) is used by the CPU backend. */
dlprep_status dlprep_l3_decoder_create(const char* device, unsigned cpu_threads,
                                       dlprep_l3_decoder** decoder);
void dlprep_l3_decoder_destroy(dlprep_l3_decoder* decoder);
/* "cpu" or "cuda": the backend that runs. */
const char* dlprep_l3_decoder_device(const dlprep_l3_decoder* decoder);

/* The work list of one batch, built on the host from its validated headers. */
typedef struct dlprep_l3_plan dlprep_l3_plan;

/* Validates `count` files (files[i] of sizes[i] bytes) and plans their decode with `options`
 * (null: the defaults). An error names the image: "image 3: l3: ...". */
dlprep_status dlprep_l3_plan_create(const void* const* files, const size_t* sizes, size_t count,
                                    const dlprep_l3_batch_options* options, dlprep_l3_plan** plan);
void dlprep_l3_plan_destroy(dlprep_l3_plan* plan);

/* Where image `index`'s window lies in the tensor and what it holds. */
typedef struct dlprep_l3_window {
  uint32_t width, height, channels; /* of the window: the image, or its crop */
  uint32_t crop_x, crop_y;          /* the window's top-left pixel in the image */
  uint64_t offset_bytes;            /* of its first element from the tensor's start */
} dlprep_l3_window;

size_t dlprep_l3_plan_count(const dlprep_l3_plan* plan);
/* Bytes of the whole tensor. */
uint64_t dlprep_l3_plan_output_bytes(const dlprep_l3_plan* plan);
/* Bytes of one element: 1 (nhwc-u8), 4 (nchw-f32) or 2 (nchw-f16). */
uint32_t dlprep_l3_plan_element_bytes(const dlprep_l3_plan* plan);
dlprep_status dlprep_l3_plan_window(const dlprep_l3_plan* plan, size_t index,
                                    dlprep_l3_window* window);

/* Decodes the planned batch (the same files the plan was made from) into host memory `out` of
 * `out_size` >= output bytes. With CUDA the files go to the GPU and the tensor comes back. */
dlprep_status dlprep_l3_decode_batch(dlprep_l3_decoder* decoder, const dlprep_l3_plan* plan,
                                     const void* const* files, const size_t* sizes, size_t count,
                                     void* out, size_t out_size);

/* A tensor in the decoder's device memory (cudaMalloc with CUDA; host memory with the CPU
 * backend), freed by dlprep_l3_tensor_destroy(), which may outlive its decoder. */
typedef struct dlprep_l3_tensor dlprep_l3_tensor;

/* Like dlprep_l3_decode_batch(), but the tensor stays in the decoder's device memory: a new
 * tensor of the plan's output bytes. The files are copied into pinned staging memory and go to
 * the device in one copy. The call returns once the tensor is complete. */
dlprep_status dlprep_l3_decode_batch_device(dlprep_l3_decoder* decoder, const dlprep_l3_plan* plan,
                                            const void* const* files, const size_t* sizes,
                                            size_t count, dlprep_l3_tensor** tensor);
/* The same into device memory the caller owns, `out_size` >= the plan's output bytes at `out`:
 * a framework's tensor (with CUDA: device memory of the decoder's GPU or managed memory,
 * checked at both ends), decoded into without a copy or an allocation. The decode runs on the
 * decoder's own stream, after the work queued on `after_stream` (a cudaStream_t as an integer,
 * as the CUDA array interface's "stream": 1 the legacy default stream, 2 the per-thread
 * default stream; 0 none), which must be a live stream of the decoder's GPU: the stream of the
 * memory's last use (PyTorch's default stream, whose cuda_stream is 0, is 1 here). No other
 * work may use the memory until the call returns. The CPU backend ignores `after_stream`. */
dlprep_status dlprep_l3_decode_batch_into_device(dlprep_l3_decoder* decoder,
                                                 const dlprep_l3_plan* plan,
                                                 const void* const* files, const size_t* sizes,
                                                 size_t count, void* out, size_t out_size,
                                                 uintptr_t after_stream);

/* A new tensor of `bytes` (0 = 1) in the decoder's device memory, its contents undefined: the
 * output of a pipelined batch. */
dlprep_status dlprep_l3_tensor_create(dlprep_l3_decoder* decoder, uint64_t bytes,
                                      dlprep_l3_tensor** tensor);

/* The tensor's first byte (a device address with CUDA) and its size. */
void* dlprep_l3_tensor_data(const dlprep_l3_tensor* tensor);
uint64_t dlprep_l3_tensor_bytes(const dlprep_l3_tensor* tensor);
/* The CUDA device ordinal of the tensor's memory (DLPack's device_id); -1 for none. */
int dlprep_l3_tensor_gpu(const dlprep_l3_tensor* tensor);
void dlprep_l3_tensor_destroy(dlprep_l3_tensor* tensor);

/* ---- Overlapped batches (man/libdlprep_l3.3, PIPELINES) ---- */

/* Up to `depth` batches in flight on the decoder's device: while one decodes, the files of the
 * next go to the device (with CUDA: each batch in flight has its own stream and pinned staging
 * memory; on the CPU, a worker thread of the pipeline's decodes them). Batches complete in the
 * order they were submitted. One thread at a time; it may outlive its decoder, and may be used
 * on another thread than the decoder's (with CUDA, one where the decoder's GPU is current). It
 * belongs to the process that made it: in a forked child its submits fail, and so do its waits
 * for batches the parent had not finished (a CPU decoder's own synchronous decodes work there;
 * CUDA does not survive a fork). */
typedef struct dlprep_l3_pipeline dlprep_l3_pipeline;

/* `depth`: 1 to 16 (2 overlaps a copy with a decode; 0 = 2). */
dlprep_status dlprep_l3_pipeline_create(dlprep_l3_decoder* decoder, unsigned depth,
                                        dlprep_l3_pipeline** pipeline);
/* Waits for the batches in flight (their failures are not reported), then frees the pipeline. */
void dlprep_l3_pipeline_destroy(dlprep_l3_pipeline* pipeline);
/* Batches submitted and not yet returned by dlprep_l3_pipeline_wait(). */
size_t dlprep_l3_pipeline_in_flight(const dlprep_l3_pipeline* pipeline);

/* Starts a batch: copies the files (validated by `plan`, made from them) into staging memory on
 * the calling thread, then queues their decode into `out` (memory as for
 * dlprep_l3_decode_batch_into_device(), or a tensor's data), to run after the work queued on
 * `after_stream` by now (0: none). The files and the plan may be released when the call
 * returns; `out` must stay allocated until dlprep_l3_pipeline_wait() has returned the batch.
 * *ticket: the batch's number, 0, 1, 2, ... in submission order. Refused with
 * DLPREP_INVALID_ARGUMENT when `depth` batches are in flight: wait first. A batch that fails
 * after it took its number (the device failed while queuing it) sets *ticket and stays in
 * flight: its wait reports it. */
dlprep_status dlprep_l3_pipeline_submit(dlprep_l3_pipeline* pipeline, const dlprep_l3_plan* plan,
                                        const void* const* files, const size_t* sizes, size_t count,
                                        void* out, size_t out_size, uintptr_t after_stream,
                                        uint64_t* ticket);
/* The same for files the caller keeps allocated and unchanged until dlprep_l3_pipeline_wait()
 * has returned the batch (or dlprep_l3_pipeline_destroy(), which waits for it, has returned):
 * the CPU backend decodes them where they are, without the copy (CUDA copies them into pinned
 * staging memory as dlprep_l3_pipeline_submit() does). */
dlprep_status dlprep_l3_pipeline_submit_kept(dlprep_l3_pipeline* pipeline,
                                             const dlprep_l3_plan* plan, const void* const* files,
                                             const size_t* sizes, size_t count, void* out,
                                             size_t out_size, uintptr_t after_stream,
                                             uint64_t* ticket);
/* Waits for the oldest batch in flight and sets *ticket to its number (also on failure). On
 * success its tensor is complete. A damaged file fails it as dlprep_l3_decode_batch() would
 * (DLPREP_CORRUPT_DATA, "image 3: ..."): the batch is dropped and the pipeline stays usable.
 * DLPREP_INVALID_ARGUMENT when nothing is in flight. */
dlprep_status dlprep_l3_pipeline_wait(dlprep_l3_pipeline* pipeline, uint64_t* ticket);

#ifdef __cplusplus
}
#endif

#endif /* DLPREP_L3_H */
