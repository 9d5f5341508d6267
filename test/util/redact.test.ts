import { expect } from "chai";
import { redactUrl } from "../../src/util/redact";

describe("redactUrl (what start-up prints of RPC_URL)", () => {
  it("keeps scheme, host and port, and hides keys in user info, path and query", () => {
    expect(redactUrl("https://base-mainnet.g.alchemy.com/v2/SECRETKEY123")).to.equal("https://base-mainnet.g.alchemy.com/***");
    expect(redactUrl("https://x.base-mainnet.quiknode.pro/abcdef0123/")).to.equal("https://x.base-mainnet.quiknode.pro/***");
    expect(redactUrl("https://rpc.example.com/?apikey=SECRET")).to.equal("https://rpc.example.com/***");
    expect(redactUrl("https://user:pass@rpc.example.com:8545")).to.equal("https://rpc.example.com:8545/***");
    expect(redactUrl("https://mainnet.base.org")).to.equal("https://mainnet.base.org");
    expect(redactUrl("not a url SECRET")).to.equal("***");
    for (const u of ["https://a.io/v2/SECRET", "https://a.io/x?k=SECRET", "https://SECRET:x@a.io"])
      expect(redactUrl(u)).to.not.include("SECRET");
  });
});
