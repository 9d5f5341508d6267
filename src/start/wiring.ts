/**
 * Wiring: the services and the webhook parts built over the booted store and chains, nothing started yet: one set of
 * chain-bound services per network (its chain, facilitator and signature checks) sharing everything else (store,
 * keys, custody, leases, locks, gas meter, webhooks). Leases a previous run under this instance id left are freed first.
 */
import { Heartbeats } from "../store/heartbeats";
import { takeOverDead } from "../payments/failover";
import type { Cleanup } from "./boot";
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { createServices, type Services } from "../services";
import { networkScopeOf } from "../services/context";
import { NetworkServices } from "../services/networks";
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
import { MongoPendingSettlementStore, PENDING_SETTLEMENTS } from "../x402/pendingSettlements";
import type { Booted } from "./boot";

export interface Webhooks {
  service: WebhookService;
  outbox: WebhookOutbox;
  worker: WebhookWorker;
}

export interface Wired {
  /** The first network's services. */
  services: Services;
  /** Every network's, and which serves an agent. */
  networks: NetworkServices;
  webhooks: Webhooks;
  leases: Leases;
  /** The service's public URLs: filled in by listen when BASE_URL and DASHBOARD_URL are unset. */
  urls: { base: string; dashboard: string };
  /** This instance's heartbeat, and its view of which peers are dead. */
  heartbeats: Heartbeats;
}

export async function wire(
  { config, store, networks: booted, telemetry }: Booted,
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
  const shared = {
    urls,
    store,
    wallets: new LocalWalletProvider(store.walletKeys, walletKey),
    keys: new KeyService(store, config.walletEncryptionKey, { cacheMs: config.apiKeyCacheMs, clock }),
    gas: new GasMeter(store, config),
    activationSecret: createHash("sha256").update(`spendgate activation codes\n${walletKey}`).digest(),
    agentLock: new DistributedMutex(leases, "agent", config.lockLeaseMs),
    instanceId,
    leases,
    webhooks: outbox,
    telemetry,
    logger,
  };
  const all = booted.map(({ name, config: view, chain }) =>
    createServices({
      ...shared,
      config: view,
      chain,
      networkScope: networkScopeOf(config, name),
      facilitator: createFacilitator({
        url: view.facilitatorUrl,
        rpcUrl: view.rpcUrl,
        chainId: view.chainId,
        privateKey: view.facilitatorPrivateKey,
        pendingSettlements: new MongoPendingSettlementStore(store.collection(PENDING_SETTLEMENTS)),
      }),
      // Owners' ERC-1271 and EIP-7702 signatures are checked on the network they sign for.
      signatures: new SignatureService(
        (signer, digest, signature) => chain.factory.isValidSignatureNow(signer, digest, signature),
        store.usedSignatures,
        view.signatureWindowSeconds,
      ),
    }),
  ) as [Services, ...Services[]];
  const networks = new NetworkServices(all);
  const services = networks.first;
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
  heartbeats.onDead = (dead) => takeOverDead(services.ctx, () => networks.recover(), dead);
  await heartbeats.start();
  cleanup.push(() => heartbeats.stop());
  return { services, networks, webhooks, leases, urls, heartbeats };
}
