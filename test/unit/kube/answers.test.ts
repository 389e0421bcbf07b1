import { describe, expect, it } from "vitest";
import { AnswerError, namespaceAnswer, podAnswer } from "../../../src/kube/answers.js";
import { podObject } from "../../kit/api/server.js";

const pod = { apiVersion: "v1", kind: "Pod", ...podObject("shop", "web", { proxy: "container" }) };

describe("the API server's answers", () => {
  it("takes the pod asked for", () => {
    expect(podAnswer(pod, "shop", "web").metadata?.uid).toBe("uid-shop-web");
    expect(namespaceAnswer({ kind: "Namespace", metadata: { name: "shop" } }, "shop").metadata?.name).toBe("shop");
  });

  it.each([
    ["{}", {}, "answered with an object without a kind, not the Pod shop/web"],
    ["[]", [], "answered with an array"],
    ["null", null, "answered with null"],
    ["a number", 7, "answered with a number"],
    ["a Status", { kind: "Status", status: "Failure", message: "pods is forbidden" }, 'answered with a Status ("pods is forbidden")'],
    ["a pod without spec", { ...pod, spec: undefined }, "Pod shop/web is malformed: spec"],
    ["a pod without containers", { ...pod, spec: { containers: [] } }, "Pod shop/web is malformed: spec.containers"],
    ["a pod with a number for an annotation", { ...pod, metadata: { ...pod.metadata, annotations: { a: 1 } } }, "metadata.annotations.a"],
    ["another pod", { ...pod, metadata: { ...pod.metadata, name: "other" } }, "answered with Pod shop/other, not shop/web"],
    ["a pod of another namespace", { ...pod, metadata: { ...pod.metadata, namespace: "bank" } }, "answered with Pod bank/web"],
    ["a namespace", { kind: "Namespace", metadata: { name: "shop" } }, 'answered with a "Namespace", not the Pod'],
  ])("refuses %s, saying what it was", (_title, body, fragment) => {
    const error = (() => {
      try {
        podAnswer(body, "shop", "web");
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(AnswerError);
    expect((error as Error).message).toContain(fragment);
  });

  it("refuses another namespace than the one asked for", () => {
    expect(() => namespaceAnswer({ kind: "Namespace", metadata: { name: "bank" } }, "shop")).toThrow(
      "answered with Namespace bank, not shop",
    );
  });
});
