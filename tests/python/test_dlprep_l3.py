"""The Python module dlprep_l3 (python/dlprep_l3) against the dlprep CLI and NumPy.

Run by ctest with PYTHONPATH at build/python; the CLI's path in DLPREP, sample_data/ in
SAMPLE_DATA, a scratch folder in SCRATCH. The CUDA case runs for real where a GPU is present
and prints why it skipped where not.
"""

import ctypes
import glob
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import unittest

import numpy as np

import dlprep_l3

DLPREP = os.environ["DLPREP"]
SAMPLES = sorted(glob.glob(os.path.join(os.environ["SAMPLE_DATA"], "images", "*.png")))
SCRATCH = os.environ["SCRATCH"]


def dlprep(*args):
    subprocess.run([DLPREP, "-q", *args], check=True)


def load_png(path):
    from PIL import Image  # here, so that the GPU machine's Python runs Batches without PIL
    return np.asarray(Image.open(path))


def mixed_image(height, width, channels, seed):
    """Smooth ramps plus noise: every predictor and width code of L3 occurs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    ramp = (x[..., None] * np.arange(1, channels + 1) + 3 * y[..., None]) % 256
    return ((ramp + rng.integers(0, 24, (height, width, channels))) % 256).astype(np.uint8)


def setUpModule():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)


class SingleImages(unittest.TestCase):
    def test_decode_equals_the_source_and_the_cli_decode(self):
        for png in SAMPLES:
            with self.subTest(png=png):
                l3 = os.path.join(SCRATCH, os.path.basename(png) + ".l3")
                npy = l3 + ".npy"
                dlprep("l3", "encode", png, "-o", l3)
                dlprep("l3", "decode", l3, "-o", npy, "--to", "npy")
                image = dlprep_l3.read(l3, threads=2)
                source = load_png(png)
                self.assertEqual(image.dtype, np.uint8)
                np.testing.assert_array_equal(image.reshape(source.shape), source)
                np.testing.assert_array_equal(image, np.load(npy))

    def test_encode_writes_the_cli_bytes(self):
        png = SAMPLES[0]
        l3 = os.path.join(SCRATCH, "cli.l3")
        dlprep("l3", "encode", png, "-o", l3)
        with open(l3, "rb") as f:
            expected = f.read()
        self.assertEqual(dlprep_l3.encode(load_png(png)), expected)

    def test_every_channel_count_round_trips_at_every_patch_size(self):
        for channels in (1, 2, 3, 4):
            for patch in (0, 8, 64, 256):
                with self.subTest(channels=channels, patch=patch):
                    image = mixed_image(37, 101, channels, channels)
                    data = dlprep_l3.encode(image, patch=patch, threads=2)
                    header = dlprep_l3.info(data)
                    self.assertEqual((header.height, header.width, header.channels),
                                     image.shape)
                    self.assertEqual(header.file_bytes, len(data))
                    if patch:
                        self.assertEqual(header.patch, patch)
                    np.testing.assert_array_equal(dlprep_l3.decode(data), image)

    def test_gray_strided_and_other_buffer_inputs(self):
        gray = mixed_image(40, 60, 1, 5)[:, :, 0]
        data = dlprep_l3.encode(gray)
        np.testing.assert_array_equal(dlprep_l3.decode(data), gray[:, :, None])
        wide = mixed_image(40, 120, 3, 6)
        view = wide[::2, 10:70]  # rows 2 apart, not contiguous
        np.testing.assert_array_equal(dlprep_l3.decode(dlprep_l3.encode(view)), view)
        for wrapped in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
            np.testing.assert_array_equal(dlprep_l3.decode(wrapped), gray[:, :, None])

    def test_decode_into_a_slice_of_a_larger_array(self):
        image = mixed_image(30, 50, 3, 7)
        canvas = np.zeros((40, 70, 3), np.uint8)
        dlprep_l3.decode(dlprep_l3.encode(image), out=canvas[5:35, 10:60])
        np.testing.assert_array_equal(canvas[5:35, 10:60], image)
        self.assertEqual(int(canvas[:5].sum()) + int(canvas[35:].sum()), 0)
        self.assertEqual(int(canvas[:, :10].sum()) + int(canvas[:, 60:].sum()), 0)
        with self.assertRaises(ValueError):
            dlprep_l3.decode(dlprep_l3.encode(image), out=canvas)
        try:
            import torch
        except ImportError:
            return
        tensor = torch.zeros((40, 70, 3), dtype=torch.uint8)  # a CPU torch tensor's memory too
        dlprep_l3.decode(dlprep_l3.encode(image), out=tensor[5:35, 10:60])
        np.testing.assert_array_equal(tensor.numpy(), canvas)

    def test_broadcast_flipped_and_strided_views_encode_as_their_pixels(self):
        row = mixed_image(1, 64, 3, 12)[0]
        for view in (np.broadcast_to(row, (64, 64, 3)), np.flipud(mixed_image(40, 50, 3, 13)),
                     mixed_image(40, 50, 3, 14)[:, ::-1], mixed_image(40, 50, 4, 15)[..., :3]):
            with self.subTest(strides=view.strides):
                np.testing.assert_array_equal(dlprep_l3.decode(dlprep_l3.encode(view)), view)
        data = dlprep_l3.encode(mixed_image(40, 50, 3, 16))
        for bad in (np.zeros((40, 50, 3), np.uint8)[::-1], np.zeros((40, 50, 3), np.int16),
                    np.zeros((40, 50, 3), np.uint8)[:, ::-1], np.zeros((50, 40, 3), np.uint8)):
            with self.assertRaises(ValueError):
                dlprep_l3.decode(data, out=bad)

    def test_write_replaces_the_file_whole_or_not_at_all(self):
        image = mixed_image(30, 40, 3, 17)
        path = os.path.join(SCRATCH, "written.l3")
        umask = os.umask(0o027)
        try:
            dlprep_l3.write(path, image)
        finally:
            os.umask(umask)
        np.testing.assert_array_equal(dlprep_l3.read(path), image)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o640)
        os.chmod(path, 0o604)
        dlprep_l3.write(path, image)  # a replaced file keeps its permissions
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o604)
        with self.assertRaises(dlprep_l3.Error):
            dlprep_l3.write(path, np.zeros((4, 4, 5), np.uint8))
        np.testing.assert_array_equal(dlprep_l3.read(path), image)
        self.assertEqual([f for f in os.listdir(SCRATCH) if f.startswith(".dlprep-")], [])
        for bad in (os.path.join(SCRATCH, "no-such-folder", "x.l3"), SCRATCH):
            with self.assertRaises(OSError) as caught:
                dlprep_l3.write(bad, image)
            self.assertEqual(caught.exception.filename, bad)
        with open(path, "r+b") as f:
            f.seek(-3, os.SEEK_END)
            f.write(b"\xff\xff\xff")
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.read(path)
        self.assertTrue(str(caught.exception).startswith(path + ": "), str(caught.exception))
        descriptor = os.open(path, os.O_RDONLY)  # open() takes one; so does read()
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.read(descriptor)
        self.assertIn(f"file descriptor {descriptor}: ", str(caught.exception))
        dlprep_l3.write(os.fsencode(path), image)
        np.testing.assert_array_equal(dlprep_l3.read(os.fsencode(path)), image)
        # A path that is no regular file (a FIFO, /dev/null) is written into, not replaced.
        fifo = os.path.join(SCRATCH, "written.fifo")
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the file is less than a pipe holds
        try:
            dlprep_l3.write(fifo, image)
            self.assertEqual(os.read(reader, 1 << 16), dlprep_l3.encode(image))
        finally:
            os.close(reader)
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
        dlprep_l3.write(path, image)
        link = os.path.join(SCRATCH, "link.l3")
        os.symlink("written.l3", link)
        other = mixed_image(10, 12, 1, 20)
        dlprep_l3.write(link, other)  # the link stays; its target gets the new image
        self.assertTrue(os.path.islink(link))
        np.testing.assert_array_equal(dlprep_l3.read(path), other)

    def test_threads_and_errors_cross_the_boundaries_intact(self):
        import pickle
        data = dlprep_l3.encode(mixed_image(32, 32, 3, 18))
        for threads in (-1, 4097, 2**32):
            with self.assertRaises(ValueError):
                dlprep_l3.decode(data, threads=threads)
            with self.assertRaises(ValueError):
                dlprep_l3.BatchDecoder("cpu", threads=threads)
        with self.assertRaises(TypeError):
            dlprep_l3.decode(data, threads=1.5)
        with self.assertRaises(TypeError):
            dlprep_l3.BatchDecoder(0)
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.decode(data[:50])
        copy = pickle.loads(pickle.dumps(caught.exception))
        self.assertEqual((copy.status, str(copy)), (caught.exception.status, str(caught.exception)))

    def test_bad_input_raises_an_error_with_the_reason(self):
        data = dlprep_l3.encode(mixed_image(64, 64, 3, 8))
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.decode(data[:-1])
        self.assertEqual(caught.exception.status, "corrupt_data")
        self.assertIn("truncated", str(caught.exception))
        damaged = bytearray(data)
        damaged[-3] ^= 0x40
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.decode(damaged)
        self.assertIn("checksum mismatch", str(caught.exception))
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.encode(np.zeros((4, 4, 5), np.uint8))
        self.assertEqual(caught.exception.status, "unsupported")
        with self.assertRaises(ValueError):
            dlprep_l3.encode(np.zeros((4, 4), np.float32))
        for patch in (12, 2**32 + 16, -8):  # never wrapped into another size
            with self.assertRaises(dlprep_l3.Error):
                dlprep_l3.encode(np.zeros((8, 8), np.uint8), patch=patch)

    def test_hostile_bytes_decode_or_raise_never_crash(self):
        """Random damage through the C boundary (the sanitizer build checks the memory)."""
        rng = random.Random(1)
        original = dlprep_l3.encode(mixed_image(70, 90, 3, 9), patch=16)
        outcomes = {"decoded": 0, "refused": 0}
        for _ in range(300):
            data = bytearray(original)
            kind = rng.randrange(4)
            if kind == 0:
                del data[rng.randrange(len(data)):]
            elif kind == 1:
                for _ in range(rng.randrange(1, 8)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            elif kind == 2:
                data[rng.randrange(64)] ^= 1 << rng.randrange(8)
            else:
                data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
            try:
                image = dlprep_l3.decode(data)
                self.assertEqual(image.shape, (70, 90, 3))
                outcomes["decoded"] += 1
            except dlprep_l3.Error:
                outcomes["refused"] += 1
            try:
                dlprep_l3.BatchDecoder("cpu").decode([original, data], layout="nchw-f16")
            except dlprep_l3.Error as e:
                self.assertTrue(str(e).startswith("image 1: "), str(e))
        self.assertGreater(outcomes["refused"], 200)

    def test_webdataset_handler_takes_l3_members_only(self):
        image = mixed_image(20, 30, 3, 10)
        data = dlprep_l3.encode(image)
        np.testing.assert_array_equal(dlprep_l3.webdataset_decoder("l3", data), image)
        np.testing.assert_array_equal(dlprep_l3.webdataset_decoder("left.L3", data), image)
        self.assertIsNone(dlprep_l3.webdataset_decoder("jpg", b"\xff\xd8"))
        self.assertIsNone(dlprep_l3.webdataset_decoder("cls", b"3"))

    def test_a_converted_dataset_reads_with_the_documented_loader(self):
        """man dlprep-convert-dataset's loader, with dlprep_l3 for the l3 samples."""
        import json
        for layout in ([], ["--shards", "1M"]):
            with self.subTest(layout=layout):
                ds = os.path.join(SCRATCH, "ds" + ("-tar" if layout else ""))
                dlprep("convert-dataset", os.path.join(os.environ["SAMPLE_DATA"], "images"), ds,
                       "--to", "l3", *layout)
                seen = 0
                with open(os.path.join(ds, "samples.jsonl")) as index:
                    records = [json.loads(line) for line in index]
                for r in records:
                    with open(os.path.join(ds, r["location"]), "rb") as f:
                        f.seek(r.get("offset", 0))
                        image = dlprep_l3.decode(f.read(r["bytes"]))
                    self.assertEqual(image.shape, (r["height"], r["width"], r["channels"]))
                    seen += 1
                self.assertEqual(seen, len(os.listdir(os.path.join(os.environ["SAMPLE_DATA"],
                                                                  "images"))))

    def test_a_converted_dataset_is_a_map_style_dataset(self):
        """dlprep_l3.Dataset against the sources, on a class tree in both layouts."""
        images = os.path.join(os.environ["SAMPLE_DATA"], "images")
        tree = os.path.join(SCRATCH, "tree")
        for label, names in (("cat", ["autumn_320x240.png", "grey_gray_320x240.png"]),
                             ("dog", ["kite_199x301.png", "path_gray_201x151.pgm"]),
                             ("", ["fallenleaf_rgba_256x192.png"])):
            os.makedirs(os.path.join(tree, label), exist_ok=True)
            for name in names:
                shutil.copy(os.path.join(images, name), os.path.join(tree, label, name))
        for layout in (["--mix", "l3:0.5,png:0.5"], ["--to", "l3", "--shards", "1M"]):
            with self.subTest(layout=layout):
                ds = os.path.join(SCRATCH, "classes" + str(len(layout)))
                dlprep("convert-dataset", tree, ds, *layout)
                data = dlprep_l3.Dataset(ds, target_transform=lambda t: t * 10)
                self.assertEqual(data.classes, ["cat", "dog"])
                self.assertEqual(data.class_to_idx, {"cat": 0, "dog": 1})
                self.assertEqual(len(data), 5)
                import json
                with open(os.path.join(ds, "samples.jsonl")) as index:
                    records = [json.loads(line) for line in index]
                formats = set()
                for i, r in enumerate(records):
                    image, target = data[i]
                    source = load_png(r["source"])
                    np.testing.assert_array_equal(image, source.reshape(image.shape))
                    self.assertEqual(image.shape, (r["height"], r["width"], r["channels"]))
                    self.assertEqual(target, {"cat": 0, "dog": 10, "": -10}[r["label"]])
                    formats.add(r["format"])
                self.assertEqual(formats, {"l3", "png"} if "--mix" in layout else {"l3"})
                self.assertEqual(dlprep_l3.Dataset(ds, transform=lambda x: x.shape)[0][0],
                                 data[0][0].shape)
        last = max(range(len(records)), key=lambda i: records[i]["offset"])
        with open(os.path.join(ds, records[last]["location"]), "r+b") as shard:
            shard.truncate(records[last]["offset"] + 10)  # the last sample cut short
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.Dataset(ds)[last]
        self.assertIn("run dlprep dataset verify", str(caught.exception))
        index = os.path.join(ds, "samples.jsonl")
        with open(index) as f:
            lines = f.readlines()
        for bad in ('{"location": "data/../../x", "bytes": 1, "label": "", "format": "l3"}',
                    '{"location": "data/a", "bytes": -1, "label": "", "format": "l3"}',
                    '{"location": "data/a", "bytes": 1, "label": "bird", "format": "l3"}',
                    '{"location": "data/a"', '[]'):
            with open(index, "w") as f:
                f.writelines(lines[:2] + [bad + "\n"])
            with self.assertRaises(dlprep_l3.Error) as caught:
                dlprep_l3.Dataset(ds)
            self.assertIn("samples.jsonl: line 3: ", str(caught.exception))
        with open(os.path.join(ds, "dataset.json")) as f:
            manifest = json.load(f)
        manifest["complete"] = False
        with open(os.path.join(ds, "dataset.json"), "w") as f:
            json.dump(manifest, f)
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.Dataset(ds)
        self.assertIn("incomplete", str(caught.exception))

    def test_a_dataset_of_l3_bytes_feeds_pipelined_batches_with_their_targets(self):
        """Dataset(decode=False) -> DataLoader's collation -> decode_batches(targets=True)."""
        images = os.path.join(os.environ["SAMPLE_DATA"], "images")
        tree = os.path.join(SCRATCH, "bytes-tree")
        for k, name in enumerate(sorted(os.listdir(images))[:6]):
            os.makedirs(os.path.join(tree, "ab"[k % 2]), exist_ok=True)
            shutil.copy(os.path.join(images, name), os.path.join(tree, "ab"[k % 2], name))
        ds = os.path.join(SCRATCH, "bytes-ds")
        dlprep("convert-dataset", tree, ds, "--to", "l3", "--shards", "1M")
        raw, full = dlprep_l3.Dataset(ds, decode=False), dlprep_l3.Dataset(ds)
        for i in range(len(raw)):
            data, target = raw[i]
            self.assertIsInstance(data, bytes)
            self.assertEqual(target, full[i][1])
            np.testing.assert_array_equal(dlprep_l3.decode(data), full[i][0])
        # What torch's default collation makes of (bytes, target) items: [files, targets].
        collated = [[[raw[i][0] for i in (k, k + 1)], [raw[i][1] for i in (k, k + 1)]]
                    for k in range(0, len(raw), 2)]
        decoder = dlprep_l3.BatchDecoder("cpu")
        got = list(decoder.decode_batches(collated, targets=True, crop=32))
        self.assertEqual(len(got), 3)
        for (batch, targets), (files, want_targets) in zip(got, collated):
            self.assertIs(targets, want_targets)
            for image, want in zip(batch, decoder.decode(files, crop=32)):  # (gray and RGB)
                np.testing.assert_array_equal(image, want)
        with self.assertRaises(TypeError):
            list(decoder.decode_batches([collated[0][0]], targets=True))  # no pair
        try:
            import torch
        except ImportError:
            print("\nno torch: the DataLoader itself is not run", file=sys.stderr)
            return
        loader = torch.utils.data.DataLoader(raw, batch_size=2, num_workers=2)
        for (batch, targets), (files, want_targets) in zip(
                decoder.decode_batches(loader, targets=True, crop=32), collated):
            self.assertEqual(targets.tolist(), want_targets)
            for image, want in zip(batch, decoder.decode(files, crop=32)):
                np.testing.assert_array_equal(image, want)

    def test_a_shard_part_keeps_the_whole_datasets_class_indices(self):
        import json
        import tarfile
        images = os.path.join(os.environ["SAMPLE_DATA"], "images")
        tree = os.path.join(SCRATCH, "parts-tree")
        for k, name in enumerate(sorted(os.listdir(images))):
            label = "abcdefg"[k % 7]  # seven classes, two images each
            os.makedirs(os.path.join(tree, label), exist_ok=True)
            shutil.copy(os.path.join(images, name), os.path.join(tree, label, name))
        whole = os.path.join(SCRATCH, "parts-whole")
        dlprep("convert-dataset", tree, whole, "--to", "l3")
        with open(os.path.join(whole, "samples.jsonl")) as index:
            keys = [json.loads(line)["key"] for line in index]
        expected = dict(zip(keys, dlprep_l3.Dataset(whole).targets))
        tar_part = os.path.join(SCRATCH, "parts-tar")
        dlprep("convert-dataset", tree, tar_part, "--to", "l3", "--shards", "1M", "--shard", "1/3")
        part = dlprep_l3.Dataset(tar_part)
        self.assertEqual(part.classes, list("abcdefg"))
        with open(os.path.join(tar_part, "samples.jsonl")) as f:
            keys = [json.loads(line)["key"] for line in f]
        cls = {}
        for shard in os.listdir(os.path.join(tar_part, "data")):
            with tarfile.open(os.path.join(tar_part, "data", shard)) as t:
                for m in t.getmembers():
                    if m.name.endswith(".cls"):
                        cls[m.name[:-4]] = int(t.extractfile(m).read())
        self.assertEqual([part[i][1] for i in range(len(part))], [cls[k] for k in keys])
        self.assertEqual([part[i][1] for i in range(len(part))], [expected[k] for k in keys])
        files_part = os.path.join(SCRATCH, "parts-files")
        dlprep("convert-dataset", tree, files_part, "--to", "l3", "--shard", "2/3")
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.Dataset(files_part)
        self.assertIn("pass classes=", str(caught.exception))
        part = dlprep_l3.Dataset(files_part, classes=list("gfedcba"))
        with open(os.path.join(files_part, "samples.jsonl")) as f:
            keys = [json.loads(line)["key"] for line in f]
        self.assertEqual(list(part.targets), [expected[k] for k in keys])
        # The parts' own lists joined: a label given twice counts once.
        joined = dlprep_l3.Dataset(files_part, classes=list("abcdefg") + list("gfa"))
        self.assertEqual(joined.classes, list("abcdefg"))
        self.assertEqual(list(joined.targets), list(part.targets))
        self.assertEqual(dlprep_l3.Dataset(files_part, classes=[b"a", *"bcdefg"]).classes,
                         list("abcdefg"))
        with self.assertRaises(TypeError):
            dlprep_l3.Dataset(files_part, classes="abcdefg")
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.Dataset(files_part, classes=["a"])
        self.assertEqual(caught.exception.status, "invalid_argument")
        self.assertIn("is not in classes=", str(caught.exception))

    def test_a_hostile_dataset_raises_errors_and_reads_nothing_outside(self):
        import json
        ds = os.path.join(SCRATCH, "hostile")
        dlprep("convert-dataset", os.path.join(os.environ["SAMPLE_DATA"], "images"), ds, "--mix",
               "l3:0.5,png:0.5")
        index = os.path.join(ds, "samples.jsonl")
        with open(index) as f:
            records = [json.loads(line) for line in f]
        png = next(r for r in records if r["format"] == "png")
        os.symlink("/etc/passwd", os.path.join(ds, "data", "outside.png"))
        with open(os.path.join(ds, "data", "anim.png"), "wb") as f:
            f.write(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")  # a GIF, labelled png
        cases = [dict(png, bytes=2**40), dict(png, location="data/outside.png", bytes=20),
                 dict(png, location="data/anim.png", bytes=13), dict(png, location="data/sub"),
                 dict(png, location="data/missing.png")]
        os.mkdir(os.path.join(ds, "data", "sub"))
        with open(index, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in cases)
        data = dlprep_l3.Dataset(ds)
        for i in range(len(cases)):
            with self.subTest(case=cases[i]["location"]):
                with self.assertRaises(dlprep_l3.Error):
                    data[i]
        with open(index, "wb") as f:
            f.write(b'{"location": "data/\xff"}\n')
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.Dataset(ds)
        self.assertIn("line 1", str(caught.exception))

    def test_a_missing_library_fails_the_import_with_what_to_do(self):
        result = subprocess.run([sys.executable, "-c", "import dlprep_l3"], capture_output=True,
                                text=True,
                                env={**os.environ, "DLPREP_L3_LIBRARY": "/nonexistent.so"})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("cannot load /nonexistent.so", result.stderr)
        self.assertIn("DLPREP_L3_LIBRARY", result.stderr)


class Batches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.images = [mixed_image(48, 64, 3, s) for s in range(4)]
        cls.files = [dlprep_l3.encode(im, patch=16) for im in cls.images]
        cls.decoder = dlprep_l3.BatchDecoder("cpu", threads=2)

    def test_nhwc_batch_is_the_images_stacked(self):
        batch = self.decoder.decode(self.files)
        self.assertEqual(self.decoder.device, "cpu")
        self.assertEqual(batch.shape, (4, 48, 64, 3))
        np.testing.assert_array_equal(batch, np.stack(self.images))

    def test_float_layouts_normalise_as_documented(self):
        mean, std = [120.5, 110, 100], [60, 55.5, 3]
        batch = self.decoder.decode(self.files, layout="nchw-f32", mean=mean, std=std)
        one = self.decoder.decode(self.files, layout="nchw-f32", mean=127.5, std=[2])
        np.testing.assert_array_equal(
            one, (np.stack(self.images).transpose(0, 3, 1, 2).astype(np.float32) - 127.5) * 0.5)
        self.assertEqual((batch.shape, batch.dtype), ((4, 3, 48, 64), np.float32))
        x = np.stack(self.images).transpose(0, 3, 1, 2).astype(np.float32)
        scale = np.float32(1) / np.asarray(std, np.float32)
        expected = (x - np.asarray(mean, np.float32)[:, None, None]) * scale[:, None, None]
        np.testing.assert_array_equal(batch, expected)
        half = self.decoder.decode(self.files, layout="nchw-f16", mean=mean, std=std)
        self.assertEqual(half.dtype, np.float16)
        np.testing.assert_array_equal(half, expected.astype(np.float16))

    def test_crops_cut_the_documented_windows(self):
        centre = self.decoder.decode(self.files, crop=(20, 30))  # (height, width)
        np.testing.assert_array_equal(centre, np.stack(self.images)[:, 14:34, 17:47])
        square = self.decoder.decode(self.files, crop=32)
        self.assertEqual(square.shape, (4, 32, 32, 3))
        a = self.decoder.decode(self.files, crop=(20, 30), crop_mode="random", seed=5)
        b = self.decoder.decode(self.files, crop=(20, 30), crop_mode="random", seed=5)
        np.testing.assert_array_equal(a, b)
        # Without a seed, each call draws its own places.
        c = self.decoder.decode(self.files, crop=(20, 30), crop_mode="random")
        d = self.decoder.decode(self.files, crop=(20, 30), crop_mode="random")
        self.assertFalse(np.array_equal(c, d))
        for window, image in zip(a, self.images):
            self.assertTrue(any((window == image[y:y + 20, x:x + 30]).all()
                                for y in range(29) for x in range(35)))

    def test_a_batch_decodes_into_a_reused_buffer(self):
        pool = np.full((4, 3, 48, 64), -7, np.float16)
        kwargs = {"layout": "nchw-f16", "mean": [1, 2, 3], "std": [4, 5, 6]}
        batch = self.decoder.decode(self.files, out=pool, **kwargs)
        self.assertTrue(np.shares_memory(batch, pool))
        np.testing.assert_array_equal(pool, self.decoder.decode(self.files, **kwargs))
        larger = np.zeros(5 * 48 * 64 * 3, np.uint8)
        batch = self.decoder.decode(self.files, out=larger)
        np.testing.assert_array_equal(batch, np.stack(self.images))
        self.assertEqual(int(larger[4 * 48 * 64 * 3:].sum()), 0)
        for bad in (np.zeros(4 * 48 * 64 * 3 - 1, np.uint8), pool[:, :, ::2],
                    np.zeros(4 * 48 * 64 * 3, np.uint8)[::-1], b"x" * 100000):
            with self.assertRaises(ValueError):
                self.decoder.decode(self.files, out=bad)

    def test_images_of_different_sizes_come_back_as_a_list(self):
        small = mixed_image(20, 24, 1, 11)
        batch = self.decoder.decode([self.files[0], dlprep_l3.encode(small)])
        self.assertIsInstance(batch, list)
        np.testing.assert_array_equal(batch[0], self.images[0])
        np.testing.assert_array_equal(batch[1], small)

    def test_bad_batches_and_options_are_named(self):
        with self.assertRaises(dlprep_l3.Error) as caught:
            self.decoder.decode([self.files[0], self.files[1][:100]])
        self.assertTrue(str(caught.exception).startswith("image 1: "))
        for kwargs in ({"layout": "nhwc-f64"}, {"mean": [1, 2, 3]}, {"layout": "nchw-f32",
                       "std": [1, 0, 1]}, {"crop": 65}, {"crop": 8, "crop_mode": "corner"},
                       {"layout": "nchw-f32", "mean": [1] * 5}, {"output": "gpu"},
                       {"crop": (2**32 + 8, 8)}, {"crop": (8, 0)}):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(dlprep_l3.Error) as caught:
                    self.decoder.decode(self.files, **kwargs)
                self.assertEqual(caught.exception.status, "invalid_argument")
        # Fewer values than an image's channels (but more than one) is refused, not the identity
        # on the channels past them.
        with self.assertRaises(dlprep_l3.Error) as caught:
            self.decoder.decode(self.files, layout="nchw-f32", mean=[1, 2])
        self.assertIn("image 0 has 3 channels", str(caught.exception))
        gray = [dlprep_l3.encode(mixed_image(8, 8, 1, 3))]
        self.assertEqual(self.decoder.decode(gray, layout="nchw-f32", mean=[1, 2]).shape,
                         (1, 1, 8, 8))
        # A host out of another dtype than the layout's (or uint8 bytes) is refused.
        with self.assertRaises(ValueError):
            self.decoder.decode(self.files, out=np.empty((4, 48, 64, 3), np.float64))
        # A file that is no bytes is named, with the likely mistake.
        with self.assertRaises(TypeError) as caught:
            self.decoder.decode([self.files[0], "a.l3"])
        self.assertIn("image 1", str(caught.exception))
        self.assertIn("not paths", str(caught.exception))
        with self.assertRaises(TypeError) as caught:
            list(self.decoder.decode_batches([(self.files, np.arange(4))]))
        self.assertIn("batch 0: image 0", str(caught.exception))
        self.assertIn("targets=True", str(caught.exception))

    def test_a_closed_decoder_says_so_and_close_waits_for_a_decode(self):
        import threading
        decoder = dlprep_l3.BatchDecoder("cpu")
        big = [dlprep_l3.encode(mixed_image(512, 512, 3, 19), patch=8)] * 8
        done = []

        def work():
            try:
                done.append(decoder.decode(big).shape)
            except dlprep_l3.Error as e:
                done.append(str(e))

        worker = threading.Thread(target=work)
        worker.start()
        decoder.close()  # during the decode, or before it: never under it
        worker.join()
        self.assertIn(done, ([(8, 512, 512, 3)], ["the decoder is closed"]))
        with self.assertRaises(dlprep_l3.Error) as caught:
            decoder.decode(self.files)
        self.assertEqual(str(caught.exception), "the decoder is closed")
        decoder.close()

    def test_gpu_arrays_lent_as_out_are_checked_for_size_and_layout(self):
        class Lent:  # what torch.cuda tensors and CuPy arrays show
            def __init__(self, shape, typestr, strides=None, read_only=False, mask=None,
                         stream=None):
                self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                                 "data": (4096, read_only), "version": 3,
                                                 "strides": strides, "mask": mask,
                                                 "stream": stream}

        self.assertEqual(dlprep_l3._device_memory_of(Lent((4, 3, 8, 8), "<f2")),
                         (4096, (4, 3, 8, 8), "<f2", 0))
        self.assertEqual(dlprep_l3._device_memory_of(Lent((4, 8), "|u1", (8, 1), stream=1)),
                         (4096, (4, 8), "|u1", 1))  # the stream the decode must wait for
        self.assertEqual(dlprep_l3._device_memory_of(Lent((4, 8), "|u1", stream=2**63))[3],
                         2**63)
        for bad in (Lent((4, 8), "|u1", (16, 1)), Lent((4, 8), "<f4", read_only=True),
                    Lent((4, 8), "|u1", mask=object()), np.zeros(8, np.uint8),
                    Lent((4, 8), "|u1", stream=0), Lent((4, 8), "|u1", stream=-3),
                    Lent((4, 8), "|u1", stream=2**64)):
            with self.assertRaises(ValueError):
                dlprep_l3._device_memory_of(bad)
        with self.assertRaises(TypeError):
            dlprep_l3._device_memory_of(Lent((4, 8), "|u1", stream="default"))
        with self.assertRaises(dlprep_l3.Error) as caught:  # the cpu backend has no GPU memory
            self.decoder.decode(self.files, output="device", out=Lent((4, 8), "|u1"))
        self.assertEqual(caught.exception.status, "device_unavailable")

    def test_pipelined_batches_come_in_order_as_decode_gives_them(self):
        ragged = [self.files[0], dlprep_l3.encode(mixed_image(20, 24, 1, 11))]
        batches = [self.files, self.files[1:], ragged, [], self.files[::-1], self.files[:1]]
        kwargs = {"crop": (24, 20), "crop_mode": "random", "seed": 40}
        for depth in (1, 2, 3):
            with self.subTest(depth=depth):
                got = list(self.decoder.decode_batches(batches[:2] + batches[4:], depth=depth,
                                                       layout="nchw-f16", mean=9, std=3,
                                                       **kwargs))
                self.assertEqual(len(got), 4)
                for k, (batch, files) in enumerate(zip(got, batches[:2] + batches[4:])):
                    seeded = dict(kwargs, seed=40 + k)  # batch k draws from seed + k
                    np.testing.assert_array_equal(batch, self.decoder.decode(
                        files, layout="nchw-f16", mean=9, std=3, **seeded))
        # Whole images: a ragged batch is a list, an empty one an empty list.
        got = list(self.decoder.decode_batches(batches))
        np.testing.assert_array_equal(got[0], np.stack(self.images))
        self.assertIsInstance(got[2], list)
        np.testing.assert_array_equal(got[2][1], mixed_image(20, 24, 1, 11))
        self.assertEqual(got[3], [])
        np.testing.assert_array_equal(got[4], np.stack(self.images[::-1]))
        # Without a seed, every batch draws its own windows.
        a, b = self.decoder.decode_batches([self.files] * 2, crop=(20, 30), crop_mode="random")
        self.assertFalse(np.array_equal(a, b))

    def test_pipelined_batches_may_reuse_their_buffers_and_drop_their_bytes(self):
        """Files in a mutable buffer are copied when submitted, so an iterable may refill one
        buffer for every batch; bytes are lent until the wait, and held until then. Images
        large enough that the decoder is still busy with a batch when the next ones come."""
        images = [mixed_image(256, 384, 3, s) for s in range(4)]
        files = [dlprep_l3.encode(im) for im in images]
        buffer = bytearray(sum(len(f) for f in files))

        def refilled(order):  # one buffer, rewritten for every batch: a reader's pattern
            for k in order:
                views, at = [], 0
                for f in [files[(k + i) % 4] for i in range(4)]:
                    buffer[at:at + len(f)] = f
                    views.append(memoryview(buffer)[at:at + len(f)])
                    at += len(f)
                yield views

        def dropped(order):  # new bytes per batch, no other reference kept
            for k in order:
                # Memory of the sizes of the files just dropped, written over: where a batch's
                # bytes were freed before its decode, the allocator hands them out here.
                scribbles = [b"\x55" * len(f) for f in files]
                del scribbles
                yield [bytes(bytearray(files[(k + i) % 4])) for i in range(4)]  # new objects

        order = [0, 1, 2, 3, 1, 2]
        for make in (refilled, dropped):
            for depth in (1, 2, 3):
                with self.subTest(make=make.__name__, depth=depth):
                    for k, batch in zip(order, self.decoder.decode_batches(make(order),
                                                                           depth=depth)):
                        np.testing.assert_array_equal(
                            batch, np.stack([images[(k + i) % 4] for i in range(4)]))

    def test_pipelined_batches_are_read_depth_ahead_of_the_one_yielded(self):
        pulled = []

        def source():
            for k in range(6):
                pulled.append(k)
                yield self.files

        batches = self.decoder.decode_batches(source(), depth=3)
        self.assertEqual(pulled, [])  # nothing before the first next()
        first = next(batches)
        self.assertEqual(pulled, [0, 1, 2, 3])  # 3 in flight while the caller has batch 0
        np.testing.assert_array_equal(first, np.stack(self.images))
        self.assertEqual(len(list(batches)), 5)
        batches.close()

    def test_pipelined_batches_decode_into_a_ring_of_arrays(self):
        ring = [np.full((4, 48, 64, 3), 7, np.uint8) for _ in range(3)]
        batches = [[f] * 4 for f in self.files] + [self.files]
        for k, batch in enumerate(self.decoder.decode_batches(batches, depth=2, out=ring)):
            self.assertIs(batch, ring[k % 3])
            want = np.stack(self.images) if k == 4 else np.stack([self.images[k]] * 4)
            np.testing.assert_array_equal(batch, want)
        with self.assertRaises(ValueError):  # depth + 1 arrays at least
            self.decoder.decode_batches(batches, depth=2, out=ring[:2])
        with self.assertRaises(ValueError):  # each with memory of its own
            self.decoder.decode_batches(batches, depth=2, out=ring[:2] + [ring[0][1:]])
        # Arrays with room for more images take a short batch: its first images are yielded.
        roomy = [np.zeros((6, 48, 64, 3), np.uint8) for _ in range(2)]
        got = list(self.decoder.decode_batches([self.files, self.files[:3]], depth=1, out=roomy))
        self.assertIs(got[0].base, roomy[0])
        np.testing.assert_array_equal(got[0], np.stack(self.images))
        np.testing.assert_array_equal(got[1], np.stack(self.images[:3]))
        self.assertEqual(int(roomy[1][3:].sum()), 0)
        with self.assertRaises(ValueError):  # each of the batch's shape
            list(self.decoder.decode_batches(batches, depth=2,
                                             out=ring[:2] + [np.zeros((4, 48, 64, 1), np.uint8)]))
        with self.assertRaises(ValueError):
            list(self.decoder.decode_batches(batches, depth=1,
                                             out=[np.zeros((4, 48, 64, 3), np.float32)] * 2))

    def test_cpu_torch_tensors_take_the_pixels_as_numpy_arrays_do(self):
        """torch's CPU tensors (pinned ones too, as a trainer copies them on with
        .cuda(non_blocking=True)) are memory to decode into on the CPU backend."""
        try:
            import torch
        except ImportError:
            print("\nno torch: its CPU tensors are not tried as out", file=sys.stderr)
            return
        f16 = {"layout": "nchw-f16", "mean": [1, 2, 3], "std": [4, 5, 6]}
        flat = torch.zeros(4 * 48 * 64 * 3 + 5, dtype=torch.uint8)
        got = self.decoder.decode(self.files, out=flat)
        self.assertEqual(got.ctypes.data, flat.data_ptr())  # a view of the tensor's memory
        np.testing.assert_array_equal(flat[:-5].numpy().reshape(4, 48, 64, 3),
                                      np.stack(self.images))
        ring = [torch.full((5, 3, 48, 64), -1, dtype=torch.float16) for _ in range(3)]
        batches = [self.files, self.files[::-1], self.files[1:3], self.files]
        for k, batch in enumerate(self.decoder.decode_batches(batches, out=ring, **f16)):
            self.assertIsInstance(batch, torch.Tensor)
            self.assertEqual(batch.data_ptr(), ring[k % 3].data_ptr())
            self.assertEqual(batch.shape[0], len(batches[k]))
            np.testing.assert_array_equal(batch.numpy(), self.decoder.decode(batches[k], **f16))
        with self.assertRaises(ValueError):  # one memory twice
            self.decoder.decode_batches(batches, out=[ring[0], ring[1], ring[0][1:]], **f16)
        for bad in (torch.zeros(100000, dtype=torch.bfloat16),  # NumPy has no view of these
                    torch.zeros(100000, requires_grad=True),
                    torch.zeros((4, 48, 64, 6), dtype=torch.uint8)[..., ::2]):
            with self.assertRaises(ValueError):
                self.decoder.decode(self.files, out=bad)
        if torch.cuda.is_available():
            pinned = torch.empty((4, 48, 64, 3), dtype=torch.uint8).pin_memory()
            self.decoder.decode(self.files, out=pinned)
            np.testing.assert_array_equal(pinned.cuda(non_blocking=True).cpu().numpy(),
                                          np.stack(self.images))

    def test_a_damaged_pipelined_batch_is_named_and_ends_the_batches(self):
        damaged = bytearray(self.files[1])
        damaged[-2] ^= 0x04
        batches = [self.files, self.files, [self.files[0], bytes(damaged)], self.files]
        seen = []
        with self.assertRaises(dlprep_l3.Error) as caught:
            for batch in self.decoder.decode_batches(batches, depth=2):
                seen.append(batch)
        self.assertEqual(len(seen), 2)
        self.assertEqual(caught.exception.status, "corrupt_data")
        self.assertTrue(str(caught.exception).startswith("batch 2: image 1: l3: "),
                        str(caught.exception))
        # A batch that does not plan is named the same way, in its turn: the batches before it
        # come first, though it was submitted while they were in flight.
        seen = []
        with self.assertRaises(dlprep_l3.Error) as caught:
            for batch in self.decoder.decode_batches([self.files] * 3 + [[self.files[0][:50]]] +
                                                     [self.files], depth=2):
                seen.append(batch)
        self.assertEqual(len(seen), 3)
        self.assertTrue(str(caught.exception).startswith("batch 3: image 0: "))

        def failing():  # an error of the iterable itself, in its turn too
            yield self.files
            yield self.files
            raise RuntimeError("the source failed")

        seen = []
        with self.assertRaisesRegex(RuntimeError, "the source failed"):
            for batch in self.decoder.decode_batches(failing(), depth=3):
                seen.append(batch)
        self.assertEqual(len(seen), 2)
        for kwargs in ({"depth": 0}, {"depth": 17}, {"layout": "nhwc-f64"}, {"crop": 65,
                       "crop_mode": "corner"}):  # refused at the call, not at the first batch
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(dlprep_l3.Error):
                    self.decoder.decode_batches(batches, **kwargs)

    def test_pipelined_batches_end_with_their_decoder_and_stop_cleanly(self):
        decoder = dlprep_l3.BatchDecoder("cpu")
        batches = decoder.decode_batches([self.files] * 5, depth=2)
        np.testing.assert_array_equal(next(batches), np.stack(self.images))
        decoder.close()  # the batches in flight finish, the next one is refused
        for _ in range(2):
            np.testing.assert_array_equal(next(batches), np.stack(self.images))
        with self.assertRaises(dlprep_l3.Error) as caught:
            next(batches)
        self.assertEqual(str(caught.exception), "batch 3: the decoder is closed")
        with self.assertRaises(dlprep_l3.Error):
            decoder.decode_batches([self.files])
        left = self.decoder.decode_batches([self.files] * 5, depth=3)
        next(left)
        left.close()  # leaves the loop: waits for the batches in flight
        self.assertEqual(list(left), [])

    def test_misused_arguments_are_named(self):
        with self.assertRaises(TypeError):
            self.decoder.decode(self.files[0])  # one file, not a list of them
        column = np.empty(4, dtype=object)  # as a pandas column's values
        column[:] = self.files
        self.assertEqual(self.decoder.decode(column).shape, (4, 48, 64, 3))
        with self.assertRaises(dlprep_l3.Error) as caught:
            self.decoder.decode(self.files, crop_mode="random")
        self.assertIn("without a crop", str(caught.exception))
        self.assertEqual(self.decoder.decode(self.files, crop=np.array(16)).shape, (4, 16, 16, 3))

    def test_a_forked_child_has_the_decoder_free(self):
        import threading
        held = threading.Event()
        release = threading.Event()

        def hold():
            with self.decoder._lock:
                held.set()
                release.wait()

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        pid = os.fork()
        if pid == 0:  # the holder does not exist here
            ok = False
            try:
                signal.alarm(30)  # a lock still held would wait for ever
                ok = self.decoder.decode(self.files).shape == (4, 48, 64, 3)
            finally:
                os._exit(0 if ok else 1)
        release.set()
        holder.join()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    def test_the_device_can_be_forced_and_named(self):
        os.environ["DLPREP_FORCE_DEVICE"] = "cpu"
        try:
            self.assertEqual(dlprep_l3.BatchDecoder("auto").device, "cpu")
        finally:
            del os.environ["DLPREP_FORCE_DEVICE"]
        with self.assertRaises(dlprep_l3.Error) as caught:
            dlprep_l3.BatchDecoder("tpu")
        self.assertEqual(caught.exception.status, "invalid_argument")
        with self.assertRaises(dlprep_l3.Error) as caught:
            self.decoder.decode(self.files, output="device")
        self.assertEqual(caught.exception.status, "device_unavailable")

    def test_cuda_equals_cpu_and_shares_its_tensor(self):
        try:
            gpu = dlprep_l3.BatchDecoder("cuda")
        except dlprep_l3.Error as e:
            self.assertEqual(e.status, "device_unavailable")
            print(f"\nskipped the CUDA case: {e}", file=sys.stderr)
            return
        with gpu:
            for layout in ("nhwc-u8", "nchw-f32", "nchw-f16"):
                kwargs = {"layout": layout, "crop": (40, 36), "crop_mode": "random", "seed": 3}
                if layout != "nhwc-u8":
                    kwargs.update(mean=[1, 2, 3], std=[4, 5, 6])
                np.testing.assert_array_equal(gpu.decode(self.files, **kwargs),
                                              self.decoder.decode(self.files, **kwargs))
            tensor = gpu.decode(self.files, output="device")
            interface = tensor.__cuda_array_interface__
            self.assertEqual((interface["shape"], interface["typestr"]), ((4, 48, 64, 3), "|u1"))
            torch = torch_on_this_gpu()
            if torch is None:
                print("\nno torch with CUDA on this GPU: torch's tensors are not tried",
                      file=sys.stderr)
                return
            shared = torch.as_tensor(tensor, device="cuda")
            from_dlpack = torch.from_dlpack(tensor)
            self.assertEqual((from_dlpack.data_ptr(), from_dlpack.device.index),
                             (shared.data_ptr(), torch.cuda.current_device()))
            del tensor  # torch keeps the memory alive
            np.testing.assert_array_equal(shared.cpu().numpy(), np.stack(self.images))
            np.testing.assert_array_equal(from_dlpack.cpu().numpy(), np.stack(self.images))
            # Straight into torch's own tensors, reused: no allocation of ours.
            pool = torch.full((4, 3, 48, 64), -1, dtype=torch.float16, device="cuda")
            for seed in (1, 2):
                kwargs = {"layout": "nchw-f16", "mean": [1, 2, 3], "std": [4, 5, 6],
                          "crop": (48, 64), "crop_mode": "random", "seed": seed}
                self.assertIs(gpu.decode(self.files, output="device", out=pool, **kwargs), pool)
                np.testing.assert_array_equal(pool.cpu().numpy(),
                                              self.decoder.decode(self.files, **kwargs))
            for bad in (torch.empty(4 * 48 * 64 * 3, dtype=torch.uint8, device="cuda"),
                        torch.empty((4, 48, 64, 3), dtype=torch.float32, device="cuda"),
                        torch.empty((4, 48, 64, 3), dtype=torch.uint8),  # host memory
                        torch.empty((4, 48, 64, 6), dtype=torch.uint8, device="cuda")[..., ::2]):
                with self.assertRaises(ValueError):
                    gpu.decode(self.files, output="device", out=bad)
            ragged = [self.files[0], dlprep_l3.encode(mixed_image(20, 24, 3, 11))]
            with self.assertRaises(ValueError):
                gpu.decode(ragged, output="device",
                           out=torch.empty(48 * 64 * 3 + 20 * 24 * 3, dtype=torch.uint8,
                                           device="cuda"))
            # The decode waits for the work queued on the tensor's stream (for torch, whose
            # interface names none, its current stream): a fill queued after a long spin there
            # would otherwise land last.
            if hasattr(torch.cuda, "_sleep"):
                side = torch.cuda.Stream()
                with torch.cuda.stream(side):
                    torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on `side`
                    pool.fill_(-1)
                    gpu.decode(self.files, output="device", out=pool, layout="nchw-f16")
                torch.cuda.synchronize()
                np.testing.assert_array_equal(pool.cpu().numpy(),
                                              self.decoder.decode(self.files, layout="nchw-f16"))
            # Pipelined: new device tensors, and a ring of torch's own.
            batches = [self.files, self.files[::-1], self.files[1:3]] * 2
            for k, got in enumerate(gpu.decode_batches(batches, layout="nchw-f32", mean=3)):
                np.testing.assert_array_equal(torch.as_tensor(got, device="cuda").cpu().numpy(),
                                              self.decoder.decode(batches[k], layout="nchw-f32",
                                                                  mean=3))
            ring = [torch.empty((4, 48, 64, 3), dtype=torch.uint8, device="cuda")
                    for _ in range(3)]
            for k, got in enumerate(gpu.decode_batches(batches[:2] * 3, out=ring)):
                self.assertIs(got, ring[k % 3])
                np.testing.assert_array_equal(got.cpu().numpy(),
                                              self.decoder.decode(batches[k % 2]))

    def test_cuda_tensors_pipelines_and_lent_tensors_hold_the_cpus_pixels(self):
        """The CUDA paths with dlprep's own device tensors (no framework needed): read back
        through torch, or through the emulated runtime (python_dlprep_l3_emulated_cuda)."""
        try:
            gpu = dlprep_l3.BatchDecoder("cuda")
        except dlprep_l3.Error as e:
            print(f"\nskipped the CUDA case: {e}", file=sys.stderr)
            return
        read = device_reader()
        if read is None:
            print("\nno torch with CUDA and no emulated device: device tensors are not read back",
                  file=sys.stderr)
            return
        with gpu:
            f16 = {"layout": "nchw-f16", "mean": [1, 2, 3], "std": [4, 5, 6]}
            tensor = gpu.decode(self.files, output="device", **f16)
            np.testing.assert_array_equal(read(tensor), self.decoder.decode(self.files, **f16))
            check_dlpack(self, tensor)
            ragged = gpu.decode([self.files[0], dlprep_l3.encode(mixed_image(20, 24, 3, 11))],
                                output="device")
            check_dlpack(self, ragged[1])  # an image after the first: its own address
            # A DeviceTensor lent back as out (it has the CUDA array interface), reused.
            for seed in (1, 2):
                crop = {"crop": (48, 64), "crop_mode": "random", "seed": seed}
                self.assertIs(gpu.decode(self.files, output="device", out=tensor, **f16, **crop),
                              tensor)
                np.testing.assert_array_equal(read(tensor),
                                              self.decoder.decode(self.files, **f16, **crop))
            # Pipelined into new tensors, and into a ring of DeviceTensors.
            batches = [self.files, self.files[::-1], self.files[1:3], []] * 2
            got = list(gpu.decode_batches(batches, depth=3, layout="nchw-f32", mean=3))
            for k, batch in enumerate(got):
                want = self.decoder.decode(batches[k], layout="nchw-f32", mean=3)
                if batches[k]:
                    np.testing.assert_array_equal(read(batch), want)
                else:
                    self.assertEqual(batch, [])
            ring = [gpu.decode(self.files, output="device") for _ in range(3)]
            for k, batch in enumerate(gpu.decode_batches([self.files, self.files[::-1]] * 3,
                                                         out=ring)):
                self.assertIs(batch, ring[k % 3])
                np.testing.assert_array_equal(read(batch),
                                              np.stack(self.images[::1 if k % 2 == 0 else -1]))
            with self.assertRaises(ValueError):  # a DeviceTensor cannot give its first images
                list(gpu.decode_batches([self.files[:2]], depth=1, out=ring[:2]))
            with self.assertRaises(ValueError):  # nor host memory be lent as device memory
                gpu.decode(self.files, output="device", out=np.zeros((4, 48, 64, 3), np.uint8))
            damaged = bytearray(self.files[2])
            damaged[len(damaged) // 2:] = bytes(b ^ 0x55 for b in damaged[len(damaged) // 2:])
            with self.assertRaises(dlprep_l3.Error) as caught:
                list(gpu.decode_batches([self.files, self.files[:2] + [bytes(damaged)]]))
            self.assertTrue(str(caught.exception).startswith("batch 1: image 2: l3: "))


def torch_on_this_gpu():
    """torch, where it is installed with CUDA and dlprep's device is a real GPU (the emulated
    library's device memory is host memory torch knows nothing of); else None."""
    if hasattr(dlprep_l3._lib, "dlprep_l3_emulated_read"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None  # a CPU-only build of torch


def check_dlpack(test, tensor):
    """The DLPack capsule of a DeviceTensor, as a consumer reads it (dlpack.h): the tensor's
    address, shape, dtype and GPU; the deleter frees what the export holds, once, whether the
    capsule was taken or dropped."""
    get_pointer, set_name = (ctypes.pythonapi[f] for f in ("PyCapsule_GetPointer",
                                                           "PyCapsule_SetName"))
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
    interface = tensor.__cuda_array_interface__
    device_type, gpu = tensor.__dlpack_device__()
    test.assertEqual(device_type, 2)  # kDLCUDA
    test.assertGreaterEqual(gpu, 0)
    held = len(dlprep_l3._dlpack_exports)
    capsule = tensor.__dlpack__(stream=None)
    managed = ctypes.cast(get_pointer(capsule, b"dltensor"),
                          ctypes.POINTER(dlprep_l3._DLManagedTensor)).contents
    dl = managed.dl_tensor
    test.assertEqual((dl.data, dl.byte_offset, bool(dl.strides)), (interface["data"][0], 0, False))
    test.assertEqual((dl.device.device_type, dl.device.device_id), (2, gpu))
    test.assertEqual(tuple(dl.shape[i] for i in range(dl.ndim)), tensor.shape)
    want_dtype = {"|u1": (1, 8), "<f4": (2, 32), "<f2": (2, 16)}[interface["typestr"]]
    test.assertEqual((dl.dtype.code, dl.dtype.bits, dl.dtype.lanes), want_dtype + (1,))
    test.assertEqual(len(dlprep_l3._dlpack_exports), held + 1)
    # Taken: the consumer renames the capsule and calls the deleter when it is done.
    set_name(capsule, b"used_dltensor")
    del capsule
    test.assertEqual(len(dlprep_l3._dlpack_exports), held + 1)
    managed.deleter(ctypes.pointer(managed))
    test.assertEqual(len(dlprep_l3._dlpack_exports), held)
    # Dropped untaken: the capsule's destructor calls the deleter.
    capsule = tensor.__dlpack__()
    test.assertEqual(len(dlprep_l3._dlpack_exports), held + 1)
    del capsule
    test.assertEqual(len(dlprep_l3._dlpack_exports), held)
    for refused in ({"copy": True}, {"dl_device": (1, 0)}):
        with test.assertRaises(BufferError):
            tensor.__dlpack__(**refused)


def device_reader():
    """A function that copies a device tensor (the CUDA array interface) to a NumPy array: through
    the emulated runtime's copy when the library has one (the emulated test's), else through torch
    with CUDA; None when neither can."""
    emulated_read = getattr(dlprep_l3._lib, "dlprep_l3_emulated_read", None)
    if emulated_read is None:
        torch = torch_on_this_gpu()
        if torch is None:
            return None
        return lambda t: torch.as_tensor(t, device="cuda").cpu().numpy()

    def read(tensor):
        interface = tensor.__cuda_array_interface__
        out = np.empty(interface["shape"], np.dtype(interface["typestr"]))
        if emulated_read(ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(interface["data"][0]),
                         ctypes.c_size_t(out.nbytes)) != 0:
            raise RuntimeError("the emulated device could not copy the tensor")
        return out
    return read


if __name__ == "__main__":
    unittest.main(verbosity=2)
