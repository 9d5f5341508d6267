/**
 * Wiring: the services and the webhook parts built over the booted store and chain, nothing started yet. Leases a
 * previous run under this instance id left are freed first.
 */
import { Heartbeats } from "../store/heartbeats";
import { takeOverDead } from "../payments/failover";
import type { Cleanup } from "./boot";
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { createServices, type Services } from "../services";
import { GasMeter } from "../services/gas";
import { KeyService } from "../services/keys";
import { SignatureService } from "../services/signatures";
import { DistributedMutex, Leases } from "../store/leases";
import { LocalWalletProvider } from "../wallets/provider";
import { WebhookService } from "../webhooks/endpoints";
import { WebhookOutbox, ensureWebhookIndexes } from "../webhooks/outbox";
import { webhookSecretKey } from "../webhooks/secrets";
import { WebhookWorker } from "../webhooks/worker";
import { createFacilitator } from "../x402/facilitator";
import type { Booted } from "./boot";

export interface Webhooks {
  service: WebhookService;
  outbox: WebhookOutbox;
  worker: WebhookWorker;
}

export interface Wired {
  services: Services;
  webhooks: Webhooks;
  leases: Leases;
  /** The service's public URLs: filled in by listen when BASE_URL and DASHBOARD_URL are unset. */
  urls: { base: string; dashboard: string };
  /** This instance's heartbeat, and its view of which peers are dead. */
  heartbeats: Heartbeats;
}

export async function wire(
  { config, store, chain, telemetry }: Booted,
  logger: Logger,
  cleanup: Cleanup,
  clock?: () => number,
): Promise<Wired> {
  const { instanceId } = config;
  const heartbeats = new Heartbeats(store, instanceId, { intervalMs: config.heartbeatMs, staleMs: config.heartbeatStaleMs, clock });
  const leases = new Leases(store, instanceId, clock, () => heartbeats.dead());
  const freed = await leases.releaseAllOf();
  if (freed) logger.warn({ instanceId, freed }, "freed the leases a previous run under this instance id left");

  const walletKey = config.walletEncryptionKey;
  const urls = { base: config.baseUrl ?? "", dashboard: config.dashboardUrl ?? "" };
  await ensureWebhookIndexes(store);
  const outbox = new WebhookOutbox(store, logger);
  const services = createServices({
    config,
    urls,
    store,
    chain,
    wallets: new LocalWalletProvider(store.walletKeys, walletKey),
    keys: new KeyService(store.apiKeys, config.walletEncryptionKey, { cacheMs: config.apiKeyCacheMs, clock }),
    facilitator: createFacilitator({
      url: config.facilitatorUrl,
      rpcUrl: config.rpcUrl,
      chainId: config.chainId,
      privateKey: config.facilitatorPrivateKey,
    }),
    signatures: new SignatureService(
      (signer, digest, signature) => chain.factory.isValidSignatureNow(signer, digest, signature),
      store.usedSignatures,
      config.signatureWindowSeconds,
    ),
    gas: new GasMeter(store, config),
    activationSecret: createHash("sha256").update(`spendgate activation codes\n${walletKey}`).digest(),
    agentLock: new DistributedMutex(leases, "agent", config.lockLeaseMs),
    instanceId,
    leases,
    webhooks: outbox,
    telemetry,
    logger,
  });
  const webhookRules = { allowHttp: config.allowHttpSellers, allowPrivate: config.allowPrivateSellers };
  const webhookKey = webhookSecretKey(walletKey);
  const webhooks = {
    outbox,
    service: new WebhookService(outbox, webhookKey, webhookRules),
    worker: new WebhookWorker(
      outbox,
      webhookKey,
      {
        ...webhookRules,
        timeoutMs: config.webhookTimeoutMs,
        backoffBaseMs: config.webhookBackoffBaseMs,
        pollMs: config.webhookPollMs,
        onAttempt: (result) => telemetry.metrics.webhookAttempt(result),
      },
      logger,
    ),
  };
  // A peer whose heartbeat went stale: its payments in flight are fenced on-chain and finished here at once.
  heartbeats.onDead = (dead) => takeOverDead(services.ctx, () => services.payments.recover(), dead);
  await heartbeats.start();
  cleanup.push(() => heartbeats.stop());
  return { services, webhooks, leases, urls, heartbeats };
}
