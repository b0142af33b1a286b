"""Fetch one source file (public URLs, or <mirror>/<file> when config mirror is set) and check it."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from sparsesvm.data.download import download

source = snakemake.params.source  # noqa: F821
mirror = snakemake.config["mirror"]  # noqa: F821 (not a param: switching mirrors must not rerun anything)
print(f"{source['file']}: from {'mirror ' + mirror if mirror else 'the public URLs'}", file=sys.stderr)
path = download(
    source["urls"],
    snakemake.output[0],  # noqa: F821
    source["checksum"],
    algorithm=source["algorithm"],
    decompressed=source["decompressed"],
    mirror=mirror,
    name=source["file"],
)
print(f"wrote {path} ({source['algorithm']} checked)", file=sys.stderr)
