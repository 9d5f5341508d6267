/** The MCP client configuration of an agent (HTTP transport, the two headers): printed by onboard and /skill.md. */
export function mcpClientConfig(baseUrl: string, agentAddress = "<agentAddress>", apiKey = "<apiKey>") {
  return {
    mcpServers: {
      spendgate: {
        type: "http",
        url: `${baseUrl}/mcp`,
        headers: { Authorization: `Bearer ${apiKey}`, "X-Agent-Address": agentAddress },
      },
    },
  };
}
