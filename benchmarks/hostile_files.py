"""Hostile files against the parse limits: each made at full size, then added by `hyperfolio add` in a child process.

Kinds (`--kinds`, comma-separated; all by default): a PDF whose content stream inflates to 2 GB
(`pdf-bomb`), a PNG whose header says 50,000 x 50,000 (`png-header`), a real 15,000 x 15,000 PNG
(`png-15k`), a one-page PDF drawing 20 images declared 25,000 x 25,000 (`pdf-images`), a .docx and a
.xlsx holding a 2 GB member of zeros (`docx-bomb`, `xlsx-bomb`), PDFs with an array nested 50,000 and
500,000 deep in the page's resources (`pdf-nest-50k`, `pdf-nest-500k`) or in an object of its own that
the page's marked content names (`pdf-nest-obj-500k`), a PDF whose page tree lists itself among its
kids (`pdf-kids-cycle`), a 10,000-page PDF (`pdf-10k`), 5 MB of random bytes named .pdf, bare and
between a %PDF header and %%EOF (`junk`, `junk-header`), and the sample report as the baseline
(`baseline`). Each file is made by a child process that never holds anything big (the bombs are
deflated a megabyte at a time, the PNG a strip of rows at a time); its peak RSS is printed.

Each file is then added to a fresh collection with `-w 0` and with `-w 2`, one run at a time, under a
wall-clock `--timeout`. A run's peak memory is measured twice: the summed RSS of the process tree
(`add` and its workers), sampled every 50 ms with psutil, and the largest single process's peak
(ru_maxrss, reported by a bare launcher process that starts `add` and waits for it). Prints a markdown
table with the line `add` printed for the file (`failed ...` or `added ...`) and the limit the file
should hit, then the output of every run that timed out, crashed, printed a traceback, printed no
such line or left processes running.

    python benchmarks/hostile_files.py [--kinds pdf-bomb,junk] [--workers 0,2] [--timeout 600]
                                       [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MB = 2**20
BOMB_MB = 2048  # what every bomb inflates to
TEXT = "This page carries an ordinary line of text, long enough to count as a text layer."


# ---------------------------------------------------------------- making the files


def write_pdf(path: Path, bodies: list[bytes]) -> None:
    """A PDF of `bodies` as objects 1..n (1 is the catalog) with a correct cross-reference table."""
    with path.open("wb") as out:
        out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, body in enumerate(bodies, 1):
            offsets.append(out.tell())
            out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
        start = out.tell()
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1))
        out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
        out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(bodies) + 1, start))


def page_objects(resources: bytes = b"", contents: bytes | None = None, kids: bytes = b"[3 0 R]") -> list[bytes]:
    """Catalog, page tree, one page with a line of Helvetica, its font and its content stream."""
    if contents is None:
        text = b"BT /F1 11 Tf 72 720 Td (" + TEXT.encode() + b") Tj ET\n"
        contents = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
    count = kids.count(b" R")
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids %s /Count %d >>" % (kids, count),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << /Font << /F1 4 0 R >> " + resources + b">> >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        contents,
    ]


def make_pdf_bomb(path: Path) -> str:
    """One page whose content stream is a line of text, then 2 GB of newlines, deflated 1 MB at a time."""
    packer = zlib.compressobj(9)
    block = b"\n" * MB
    parts = [packer.compress(b"BT /F1 11 Tf 72 720 Td (" + TEXT.encode() + b") Tj ET\n")]
    parts += [packer.compress(block) for _ in range(BOMB_MB)]
    parts.append(packer.flush())
    packed = b"".join(parts)  # about 2 MB
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream"
    write_pdf(path, page_objects(contents=stream))
    return f"content stream inflates to {BOMB_MB:,} MB from {len(packed) / MB:.1f} MB"


def nested_maker(depth: int, inline: bool = True) -> Callable[[Path], str]:
    """An array nested `depth` deep: in the page's own /Resources (inline), or in an object of its own that
    the page's marked content names through /Properties (so the interpreter resolves it mid-page)."""

    def make(path: Path) -> str:
        nest = b"[" * depth + b"0" + b"]" * depth
        if inline:
            write_pdf(path, page_objects(resources=b"/Deep " + nest + b" "))
            return f"the page's /Resources hold an array nested {depth:,} deep"
        text = b"/OC /Deep BDC BT /F1 11 Tf 72 720 Td (" + TEXT.encode() + b") Tj ET EMC\n"
        contents = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
        write_pdf(path, [*page_objects(resources=b"/Properties << /Deep 6 0 R >> ", contents=contents), nest])
        return f"object 6, an array nested {depth:,} deep, is the property list of the page's marked content"

    return make


def make_pdf_images(path: Path, side: int = 25_000, count: int = 20) -> str:
    """One page of text that also draws `count` small image XObjects, each declared side x side 8-bit grey
    (4x parse.max_image_pixels at 25,000) with only 64 rows of data: 1.6 KB deflated, 625 MB decoded."""
    packed = zlib.compress(bytes(side * 64), 9)
    image = (
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /FlateDecode /Length %d >>\nstream\n" % (side, side, len(packed)) + packed + b"\nendstream"
    )
    draws = b"".join(b"q 20 0 0 20 %d 100 cm /Im%d Do Q\n" % (20 + 28 * i, i) for i in range(count))
    text = draws + b"BT /F1 11 Tf 72 720 Td (" + TEXT.encode() + b") Tj ET\n"
    contents = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
    names = b"".join(b"/Im%d %d 0 R " % (i, 6 + i) for i in range(count))
    write_pdf(path, [*page_objects(resources=b"/XObject << " + names + b">> ", contents=contents), *[image] * count])
    return f"one page drawing {count} images declared {side:,} x {side:,} (8-bit grey), {len(packed):,} bytes each"


def make_kids_cycle(path: Path) -> str:
    """The root /Pages node lists the page and then itself."""
    write_pdf(path, page_objects(kids=b"[3 0 R 2 0 R]"))
    return "root /Pages /Kids [page, root itself], /Count 2"


def make_many_pages(path: Path, pages: int = 10_000) -> str:
    import pymupdf

    doc = pymupdf.open()
    for number in range(1, pages + 1):
        doc.new_page().insert_text((72, 72), f"Page {number}. {TEXT}", fontsize=11)
    doc.save(path, garbage=1, deflate=True)
    doc.close()
    return f"{pages:,} pages of one line"


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def make_png_header(path: Path, side: int = 50_000) -> str:
    """A 1-bit grey PNG whose header says side x side; its IDAT holds only the first 16 rows."""
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    rows = (b"\x00" + b"\xff" * ((side + 7) // 8)) * 16
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", zlib.compress(rows, 9))
        + png_chunk(b"IEND", b"")
    )
    return f"header {side:,} x {side:,}, 1-bit grey, 16 rows of data"


def make_png_real(path: Path, side: int = 15_000, strip: int = 500) -> str:
    """A decodable side x side 1-bit PNG with lines of large text, drawn and deflated a strip of rows at a
    time (Pillow keeps mode "1" at a byte per pixel: the whole image would take 225 MB)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=180)
    packer = zlib.compressobj(9)
    row_bytes = (side + 7) // 8
    parts = []
    for top in range(0, side, strip):
        band = Image.new("1", (side, min(strip, side - top)), 1)
        if (top // strip) % 3 == 1:
            text = f"Line {top // strip // 3 + 1} of a very large scanned page, drawn at {top:,} pixels down."
            ImageDraw.Draw(band).text((400, 150), text, fill=0, font=font)
        packed = band.tobytes()  # a bit per pixel, rows padded to whole bytes
        band.close()
        rows = (b"\x00" + packed[start : start + row_bytes] for start in range(0, len(packed), row_bytes))
        parts.append(packer.compress(b"".join(rows)))
    parts.append(packer.flush())
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", b"".join(parts))
        + png_chunk(b"IEND", b"")
    )
    return f"{side:,} x {side:,} pixels, 1-bit grey, decodable, 10 lines of text"


def office_bomb_maker(kind: str) -> Callable[[Path], str]:
    """A real .docx or .xlsx plus a member of 2 GB of zeros, written 1 MB at a time (zip64)."""

    def make(path: Path) -> str:
        small = io.BytesIO()
        if kind == "docx":
            import docx

            document = docx.Document()
            document.add_heading("Quarterly notes", 1)
            document.add_paragraph(TEXT)
            document.save(small)
            member = "word/media/filler.bin"
        else:
            import openpyxl

            book = openpyxl.Workbook()
            sheet = book.active
            sheet.append(["quarter", "revenue"])
            sheet.append(["Q1", 120])
            book.save(small)
            member = "xl/media/filler.bin"
        block = bytes(MB)
        with (
            zipfile.ZipFile(small) as source,
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target,
        ):
            for info in source.infolist():
                target.writestr(info, source.read(info))
            with target.open(member, "w", force_zip64=True) as sink:
                for _ in range(BOMB_MB):
                    sink.write(block)
        return f"a real .{kind} plus {member} of {BOMB_MB:,} MB of zeros"

    return make


def make_junk(path: Path, header: bool = False) -> str:
    body = os.urandom(5 * MB)
    path.write_bytes(b"%PDF-1.7\n" + body + b"\n%%EOF\n" if header else body)
    return "5 MB of os.urandom" + (" between %PDF-1.7 and %%EOF" if header else "")


def make_baseline(path: Path) -> str:
    from hyperfolio.sample import write_sample_report

    write_sample_report(path)
    return "the 4-page sample report"


@dataclass(frozen=True)
class Kind:
    name: str
    filename: str
    make: Callable[[Path], str]
    limit: str  # what should refuse it


KINDS = [
    Kind("baseline", "sample-report.pdf", make_baseline, "none: indexed"),
    Kind("pdf-bomb", "bomb.pdf", make_pdf_bomb, "parse.max_stream_mb (256 MB)"),
    Kind("png-header", "header-50k.png", make_png_header, "parse.max_image_pixels (150,000,000)"),
    Kind("png-15k", "real-15k.png", make_png_real, "parse.max_image_pixels (150,000,000)"),
    Kind("docx-bomb", "bomb.docx", office_bomb_maker("docx"), "parse.max_archive_mb (1,024 MB)"),
    Kind("xlsx-bomb", "bomb.xlsx", office_bomb_maker("xlsx"), "parse.max_archive_mb (1,024 MB)"),
    Kind(
        "pdf-images",
        "images-25k.pdf",
        make_pdf_images,
        "parse.max_image_pixels (150,000,000), parse.page_seconds (30 s)",
    ),
    Kind("pdf-nest-50k", "nest-50k.pdf", nested_maker(50_000), "none: a one-line error, or indexed, in bounds"),
    Kind("pdf-nest-500k", "nest-500k.pdf", nested_maker(500_000), "none: a one-line error, or indexed, in bounds"),
    Kind(
        "pdf-nest-obj-500k",
        "nest-obj-500k.pdf",
        nested_maker(500_000, inline=False),
        "none: a one-line error, or indexed, in bounds",
    ),
    Kind("pdf-kids-cycle", "kids-cycle.pdf", make_kids_cycle, "none: a one-line error, or its one page"),
    Kind("pdf-10k", "pages-10k.pdf", make_many_pages, "parse.max_pages (5,000)"),
    Kind("junk", "junk.pdf", make_junk, "format check (no %PDF header)"),
    Kind("junk-header", "junk-header.pdf", lambda path: make_junk(path, header=True), "format check (not a PDF)"),
]

OPENS = "import pymupdf, sys\ndoc = pymupdf.open(sys.argv[1])\nprint(doc.page_count, 'pages')"


def pymupdf_opens(path: Path) -> str:
    """Whether PyMuPDF opens the PDF and how many pages it sees, asked in a child (a bad file may crash it)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", OPENS, str(path)], capture_output=True, text=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        return "PyMuPDF: no answer in 120 s"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"PyMuPDF: {last[:120]}"
    return f"PyMuPDF opens it: {done.stdout.strip()}"


# ---------------------------------------------------------------- running `add`


@dataclass
class Run:
    kind: Kind
    size: int
    workers: int
    code: int | None = None  # exit code, negative for a signal; None when killed at the timeout
    message: str = ""
    tree_peak: int = 0  # bytes, the process tree's summed RSS, sampled
    own_peak: int = 0  # bytes, the largest single process's peak RSS
    seconds: float = 0.0
    strays: int = 0  # descendants still alive after `add` exited
    log: Path = field(default_factory=Path)

    @property
    def anomalous(self) -> bool:
        text = self.log.read_text(errors="replace") if self.log.is_file() else ""
        return self.code not in (0, 1) or "Traceback" in text or self.strays > 0 or not self.message


# Runs `add` from a small launcher: a child's ru_maxrss starts at the high-water mark of the process it
# was forked from, so the launcher (a bare interpreter) forks it instead of this script, waits for it and
# writes its exit code and peak RSS (the largest of it and its waited-for workers) to argv[1].
LAUNCHER = """import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def descendants(launcher: psutil.Process, seen: set[int]) -> int:
    """Summed RSS of the launcher's descendants (`add` and its workers), whose pids go into `seen`."""
    total = 0
    with contextlib.suppress(psutil.Error):
        for process in launcher.children(recursive=True):
            seen.add(process.pid)
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
    return total


def kill(pids: set[int]) -> int:
    """Kill these processes (all started under this script's launcher); how many were still alive."""
    alive = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                alive += 1
                process.kill()
    return alive


def add(kind: Kind, path: Path, workers: int, work: Path, timeout: float) -> Run:
    collection = work / "collections" / f"{kind.name}-w{workers}"
    shutil.rmtree(collection, ignore_errors=True)
    log = work / "logs" / f"{kind.name}-w{workers}.log"
    result = log.with_suffix(".rusage")
    log.parent.mkdir(parents=True, exist_ok=True)
    result.unlink(missing_ok=True)
    run = Run(kind, path.stat().st_size, workers, log=log)
    command = [sys.executable, "-m", "hyperfolio", "add", str(path), "-c", str(collection), "-w", str(workers)]
    env = {**os.environ, "COLUMNS": "1000", "NO_COLOR": "1", "TERM": "dumb"}
    seen: set[int] = set()
    started = time.perf_counter()
    with log.open("wb") as sink:
        launcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", LAUNCHER, str(result), *command], stdout=sink, stderr=sink, env=env
        )
    watched = psutil.Process(launcher.pid)
    timed_out = False
    while launcher.poll() is None:
        run.tree_peak = max(run.tree_peak, descendants(watched, seen))
        if not timed_out and time.perf_counter() - started > timeout:
            timed_out = True
            descendants(watched, seen)
            kill(seen)
        time.sleep(0.05)
    run.seconds = time.perf_counter() - started
    if result.is_file():
        code, peak = result.read_text().split()
        run.code, run.own_peak = int(code), int(peak) * 1024
    else:
        run.code = launcher.returncode
    if timed_out:
        run.code = None
    time.sleep(0.5)  # workers abandoned at exit get a moment to notice
    run.strays = kill(seen)
    run.message = said(log.read_text(errors="replace"), path)
    if timed_out:
        run.message = f"killed after {timeout:g} s; {run.message}"
    shutil.rmtree(collection, ignore_errors=True)
    return run


def said(output: str, path: Path) -> str:
    """The line `add` printed about the file (failed or added), its path shortened to the name."""
    lines = [line.strip() for line in output.splitlines()]
    found = [line for line in lines if line.startswith(("failed ", "added "))]
    if not found:
        found = [line for line in lines if re.match(r"\w*(Error|Exception)\b", line)] or lines[-1:]
    return found[0].replace(str(path), path.name) if found else ""


# ---------------------------------------------------------------- the report


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def print_table(runs: list[Run]) -> None:
    print()
    print(
        "| kind | file size | workers | exit | message | peak RSS, tree (MB) | largest process (MB) | seconds "
        "| limit it should hit |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---|")
    for run in runs:
        code = "timeout" if run.code is None else str(run.code)
        if run.strays:
            code += f" ({run.strays} left running)"
        print(
            f"| {run.kind.name} | {size_text(run.size)} | {run.workers} | {code} | {cell(run.message)} | "
            f"{run.tree_peak / MB:,.0f} | {run.own_peak / MB:,.0f} | {run.seconds:.1f} | {run.kind.limit} |"
        )


def size_text(size: int) -> str:
    return f"{size / MB:,.1f} MB" if size >= MB else f"{size / 1024:,.1f} KB"


def generate(kind: Kind, path: Path, work: Path) -> tuple[str, float, int]:
    """Make the file in a child process of the launcher (this script keeps no image or document in
    memory): what it is (or why it failed), seconds, and the generator's peak RSS in bytes."""
    result = work / "logs" / f"make-{kind.name}.rusage"
    result.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--make", kind.name, str(path)]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LAUNCHER, str(result), *command], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    code, peak = result.read_text().split() if result.is_file() else (str(done.returncode), "0")
    lines = (done.stdout if code == "0" else done.stderr).strip().splitlines()
    return (lines[-1] if lines else f"exit {code}"), seconds, int(peak) * 1024


def main() -> int:
    names = [kind.name for kind in KINDS]
    if len(sys.argv) == 4 and sys.argv[1] == "--make":  # the generator's child process
        print({kind.name: kind for kind in KINDS}[sys.argv[2]].make(Path(sys.argv[3])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(names), help=f"comma-separated subset of: {', '.join(names)}")
    parser.add_argument("--workers", default="0,2", help="worker settings to run each file with (-w)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    parser.add_argument("--out", type=Path, default=None, help="folder for the files (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the files, logs and folder afterwards")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.kinds.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"unknown kinds {', '.join(unknown)}; choose from {', '.join(names)}")
    kinds = [kind for kind in KINDS if kind.name in chosen]
    worker_counts = [int(count) for count in args.workers.split(",")]

    temporary = args.out is None
    work = Path(tempfile.mkdtemp(prefix="hostile-")) if temporary else args.out.resolve()
    (work / "logs").mkdir(parents=True, exist_ok=True)
    print(f"files in {work}; each added with -w {', -w '.join(map(str, worker_counts))}; timeout {args.timeout:g} s")
    print()
    print("| kind | file | size | made in (s) | generator peak RSS (MB) | what it is | opens |")
    print("|---|---|---:|---:|---:|---|---|")
    runs: list[Run] = []
    made: list[Path] = []
    try:
        for kind in kinds:
            path = work / kind.filename
            path.unlink(missing_ok=True)
            made.append(path)
            what, seconds, peak = generate(kind, path, work)
            if not path.is_file():
                print(
                    f"| {kind.name} | {path.name} | - | {seconds:.1f} | {peak / MB:,.0f} | NOT MADE: {cell(what)} | |"
                )
                continue
            opens = pymupdf_opens(path) if path.suffix == ".pdf" else ""
            print(
                f"| {kind.name} | {path.name} | {size_text(path.stat().st_size)} | {seconds:.1f} | {peak / MB:,.0f} "
                f"| {what} | {cell(opens)} |",
                flush=True,
            )
            for workers in worker_counts:
                run = add(kind, path, workers, work, args.timeout)
                runs.append(run)
                print(f"    -w {workers}: exit {run.code}, {run.seconds:.1f} s: {run.message[:160]}", flush=True)
        print_table(runs)
        print()
        print(f"this script's own peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
        for run in runs:
            if run.anomalous:
                tail = run.log.read_text(errors="replace").splitlines()[-40:]
                print(f"\n--- {run.kind.name} -w {run.workers}: last lines of its output ({run.log})")
                print("\n".join(tail))
    finally:
        if not args.keep:
            if temporary:
                shutil.rmtree(work, ignore_errors=True)
            else:
                for path in made:
                    path.unlink(missing_ok=True)
                shutil.rmtree(work / "collections", ignore_errors=True)
                shutil.rmtree(work / "logs", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
