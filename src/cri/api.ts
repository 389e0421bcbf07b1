/**
 * The subset of the CRI v1 API (kubernetes/cri-api, pkg/apis/runtime/v1/api.proto) that
 * meshcni calls, with upstream's names and field numbers, so containerd and CRI-O answer
 * it as they answer kubelet: which sandboxes a pod has, and each one's verbose status,
 * where the runtime says which netns it made for it; and its own verbose status, where it
 * says which CNI config it loaded (the field left out, its conditions, is never read). Parsed at run time (nothing beside
 * the binary).
 */
export const runtimeProto = `
syntax = "proto3";
package runtime.v1;

service RuntimeService {
  rpc Version(VersionRequest) returns (VersionResponse) {}
  rpc ListPodSandbox(ListPodSandboxRequest) returns (ListPodSandboxResponse) {}
  rpc PodSandboxStatus(PodSandboxStatusRequest) returns (PodSandboxStatusResponse) {}
  rpc Status(StatusRequest) returns (StatusResponse) {}
}

message VersionRequest { string version = 1; }
message VersionResponse { string version = 1; string runtime_name = 2; string runtime_version = 3; string runtime_api_version = 4; }

enum PodSandboxState { SANDBOX_READY = 0; SANDBOX_NOTREADY = 1; }
message PodSandboxStateValue { PodSandboxState state = 1; }
message PodSandboxFilter { string id = 1; PodSandboxStateValue state = 2; map<string, string> label_selector = 3; }
message PodSandboxMetadata { string name = 1; string uid = 2; string namespace = 3; uint32 attempt = 4; }
message PodSandbox { string id = 1; PodSandboxMetadata metadata = 2; PodSandboxState state = 3; int64 created_at = 4; map<string, string> labels = 5; }
message ListPodSandboxRequest { PodSandboxFilter filter = 1; }
message ListPodSandboxResponse { repeated PodSandbox items = 1; }

message PodSandboxStatusRequest { string pod_sandbox_id = 1; bool verbose = 2; }
message PodIP { string ip = 1; }
message PodSandboxNetworkStatus { string ip = 1; repeated PodIP additional_ips = 2; }
message PodSandboxStatus { string id = 1; PodSandboxMetadata metadata = 2; PodSandboxState state = 3; int64 created_at = 4; PodSandboxNetworkStatus network = 5; }
message PodSandboxStatusResponse { PodSandboxStatus status = 1; map<string, string> info = 2; }

message StatusRequest { bool verbose = 1; }
message StatusResponse { map<string, string> info = 2; }
`;

/** The label kubelet puts on every sandbox: the pod's UID. */
export const podUidLabel = "io.kubernetes.pod.uid";
