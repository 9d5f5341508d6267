/** Who is calling: what an API key (or the registration token) stands for, read by auth and passed down to services. */
export type Principal =
  | { role: "agent"; agentAddress: string; keyPrefix: string }
  | { role: "owner"; ownerAddress: string; keyPrefix: string }
  | { role: "registrar" };
