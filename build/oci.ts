// Writes an OCI image layout archive (what `ctr images import` and registries' tools
// read) from files on disk, with no container engine: one gzipped layer per image, an
// image index naming each platform's manifest.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, lstatSync, readlinkSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";

/** One file of a layer: its path in the image and where its bytes (or its link target) come from. */
export type LayerEntry =
  | { path: string; source: string; mode?: number }
  | { path: string; directory: true; mode?: number }
  | { path: string; symlink: string };

export interface PlatformImage {
  os: "linux";
  architecture: "amd64" | "arm64";
  entries: LayerEntry[];
  /** The image config's `config`: Entrypoint, Cmd, Env, User… */
  config: Record<string, unknown>;
}

const sha256 = (data: Buffer) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** A tar of the entries, built in memory (layers here are a few hundred MB at most). */
async function layerTar(entries: LayerEntry[]): Promise<Buffer> {
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on("data", (chunk: unknown) => chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    tar.on("end", () => resolve());
    tar.on("error", reject);
  });
  const mtime = new Date(0);
  for (const entry of [...entries].sort((a, b) => a.path.localeCompare(b.path))) {
    const name = entry.path.replace(/^\/+/, "");
    if ("directory" in entry) tar.entry({ name, type: "directory", mode: entry.mode ?? 0o755, mtime });
    else if ("symlink" in entry) tar.entry({ name, type: "symlink", linkname: entry.symlink, mtime });
    else {
      const stat = lstatSync(entry.source);
      if (stat.isSymbolicLink()) {
        tar.entry({ name, type: "symlink", linkname: readlinkSync(entry.source), mtime });
        continue;
      }
      const sink = tar.entry({ name, size: stat.size, mode: entry.mode ?? stat.mode & 0o7777, mtime });
      await pipeline(createReadStream(entry.source), sink);
    }
  }
  tar.finalize();
  await done;
  return Buffer.concat(chunks);
}

/**
 * Writes `path`: an OCI image layout tar holding one image per platform behind an index,
 * tagged `name` (the annotation containerd's import reads). Returns the size in bytes of
 * each platform's layer (`linux/amd64`), and gzipped (`linux/amd64:gzip`), and the image
 * index's digest (what `name@digest` pulls, once the archive is pushed as it is).
 */
export async function writeOciArchive(
  path: string,
  name: string,
  platforms: PlatformImage[],
): Promise<{ sizes: Record<string, number>; digest: string }> {
  const blobs = new Map<string, Buffer>();
  const blob = (data: Buffer, mediaType: string) => {
    const digest = sha256(data);
    blobs.set(digest, data);
    return { mediaType, digest, size: data.length };
  };
  const sizes: Record<string, number> = {};
  const manifests = [];
  for (const platform of platforms) {
    const layer = await layerTar(platform.entries);
    const compressed = gzipSync(layer);
    sizes[`${platform.os}/${platform.architecture}`] = layer.length;
    sizes[`${platform.os}/${platform.architecture}:gzip`] = compressed.length;
    const layerDescriptor = blob(compressed, "application/vnd.oci.image.layer.v1.tar+gzip");
    const config = blob(
      Buffer.from(
        JSON.stringify({
          architecture: platform.architecture,
          os: platform.os,
          config: platform.config,
          rootfs: { type: "layers", diff_ids: [sha256(layer)] },
        }),
      ),
      "application/vnd.oci.image.config.v1+json",
    );
    const manifest = { schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config, layers: [layerDescriptor] };
    manifests.push({
      ...blob(Buffer.from(JSON.stringify(manifest)), manifest.mediaType),
      platform: { os: platform.os, architecture: platform.architecture },
    });
  }
  const imageIndex = { schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests };
  const indexBlob = blob(Buffer.from(JSON.stringify(imageIndex)), imageIndex.mediaType);
  const tag = name.slice(name.lastIndexOf(":") + 1);
  const layoutIndex = {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{ ...indexBlob, annotations: { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag } }],
  };
  const archive = pack();
  const written = pipeline(archive, createWriteStream(path));
  archive.entry({ name: "oci-layout" }, JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  archive.entry({ name: "index.json" }, JSON.stringify(layoutIndex));
  archive.entry({ name: "blobs/", type: "directory" });
  archive.entry({ name: "blobs/sha256/", type: "directory" });
  for (const [digest, data] of blobs) archive.entry({ name: `blobs/sha256/${digest.slice("sha256:".length)}` }, data);
  archive.finalize();
  await written;
  return { sizes, digest: indexBlob.digest };
}
