import { describe, expect, it } from "vitest";
import { defaultTemplate, renderTemplate } from "../../../src/installer/template.js";

describe("template", () => {
  it("fills the kubeconfig path and names the binary after the type", () => {
    const template = renderTemplate(defaultTemplate, "/etc/cni/net.d/ZZZ-meshcni-kubeconfig");
    expect(template).toMatchObject({
      ok: true,
      binaryName: "meshcni",
      entry: { kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } },
    });
    const linkerd = renderTemplate('{"type":"linkerd-cni","kubernetes":{"kubeconfig":"__KUBECONFIG_FILEPATH__"}}', '/a "b"');
    expect(linkerd).toMatchObject({ ok: true, binaryName: "linkerd-cni", entry: { kubernetes: { kubeconfig: '/a "b"' } } });
  });

  it("refuses what is not JSON, not an object, or not our type", () => {
    expect(renderTemplate("{", "/k")).toMatchObject({ ok: false, reason: expect.stringContaining("not valid JSON") });
    expect(renderTemplate("[]", "/k")).toMatchObject({ ok: false, reason: expect.stringContaining("JSON object") });
    expect(renderTemplate('{"type":"calico"}', "/k")).toMatchObject({ ok: false, reason: expect.stringContaining('"calico"') });
  });

  it("refuses a template that sets probe: the plugin would pass every pod through unredirected", () => {
    for (const probe of ["true", "false"])
      expect(renderTemplate(`{"type":"meshcni","probe":${probe}}`, "/k")).toMatchObject({
        ok: false,
        reason: expect.stringContaining('"probe"'),
      });
  });
});
