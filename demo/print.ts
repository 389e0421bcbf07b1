/** How the demo prints: a heading per step, then label and value lines. */
export const step = (title: string) => console.log(`\n== ${title}`);
export const show = (label: string, value: string) => console.log(`   ${label.padEnd(64)} ${value}`);
