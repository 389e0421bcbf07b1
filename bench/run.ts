// `npm run bench`: prints each section's figures and writes them to bench/results/.
import { benchInstaller } from "./installer.js";

await benchInstaller();
