import packageJson from "../package.json" with { type: "json" };

/** Set by the build (`--define`): the commit the binary was built from. */
declare const MESHCNI_COMMIT: string | undefined;

/** What this binary is: for `meshcni --version`, meshcni_build_info and the image's tag. */
export const buildInfo = {
  version: packageJson.version,
  commit: typeof MESHCNI_COMMIT === "string" ? MESHCNI_COMMIT : "unknown",
  runtime: `bun ${process.versions.bun ?? "(not compiled)"}`,
  platform: `${process.platform}/${process.arch}`,
};

export const imageRepository = "ghcr.io/meshcni/meshcni";
