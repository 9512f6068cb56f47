//===- NcclTransport.cpp - zb runtime: messages through NCCL --------------===//
//
// A send copies the buffer into a staging block on the compute stream (the
// caller may reuse its buffer at once, as on the CPU) and its channel's
// stream waits for that copy; a receive's stream waits for the compute
// stream (the buffer may still be read by an earlier kernel) and the
// compute stream waits for the receive.
//
// NCCL has no tags: a channel delivers in the sender's order, while a rank
// program may receive in another order (MPI matches tags). The compiler
// knows every channel's order (zb-lower-pipeline checks it; plan.json
// ranks[r].sends) and zb-run hands it over before the first step
// (zbrt_set_channel_order): a receive whose message is not next on its
// channel first receives the ones before it into staging blocks, and every
// step is checked against the order. A channel without an order carries
// nothing: its messages go through MPI on the host.
//
//===----------------------------------------------------------------------===//

#include "NcclTransport.h"

#include "../DynamicLibrary.h"
#include "../Internal.h"

#include <mpi.h>

#include <cstdio>
#include <map>
#include <set>
#include <vector>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

Transport::~Transport() = default;

namespace {

/// One direction between this rank and a peer: a two-rank communicator
/// (the sender is its rank 0) and the stream it runs on here.
struct Channel {
  NcclComm comm = nullptr;
  Handle stream = nullptr;
};

/// A posted receive (for the watchdog's message).
struct PendingRecv {
  int32_t peer, tag;
  Handle done;
};

using Message = ChannelMessage;

/// A message that arrived before this rank asked for it: it waits in a
/// staging block until its receive.
struct EarlyMessage {
  Message message;
  Staging staging;
  Handle arrived;
};

std::string describe(const Message &m) {
  char tag[128];
  detail::describeTag(m.tag, tag, sizeof tag);
  return std::string("message with ") + tag + " of " + std::to_string(m.bytes) +
         " bytes";
}

class NcclTransport final : public Transport {
public:
  NcclTransport(Device &device, const Nccl &nccl)
      : device(device), nccl(nccl) {}
  void createChannels(const std::set<int32_t> &excluded);

  void setChannelOrder(int32_t from, int32_t to,
                       const std::vector<ChannelMessage> &order) override;
  bool send(const void *buf, int64_t bytes, int32_t peer, int32_t tag) override;
  bool recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) override;
  void pollErrors() override;
  bool idle() override;
  std::string pendingReceive() override;
  void receivesArrived() override;
  void stepEnd() override;
  void abort() override;
  void finalize() override;

private:
  void check(int result, const char *call, int32_t peer);
  bool takeEarly(void *buf, const Message &m, int32_t peer);
  void receiveEarlierMessages(const Message &m, int32_t peer, const Channel &c);
  void checkStepOrders();
  void noOrder(int32_t peer);

  Device &device;
  Nccl nccl;
  std::map<int32_t, Channel> sendTo, recvFrom;
  std::vector<PendingRecv> pendingRecvs;
  /// Per peer with a channel: the messages this rank sends it in a step, in
  /// order; the messages the peer sends this rank (the channel's order).
  std::map<int32_t, std::vector<Message>> sendOrder, channelOrder;
  std::map<int32_t, size_t> sendPosition, channelPosition;
  std::map<int32_t, std::vector<EarlyMessage>> early;
  MPI_Comm bootstrap = MPI_COMM_NULL;
  bool saidNoOrder = false;
};

void NcclTransport::check(int result, const char *call, int32_t peer) {
  if (result == 0 || result == kNcclInProgress)
    return;
  char action[128];
  detail::currentAction(action, sizeof action);
  fatalf("NCCL error in %s with rank %d (%s): %s", call, peer, action,
         nccl.errorString ? nccl.errorString(result) : "unknown");
}

/// A message on a channel whose order nobody handed over (a plan.json
/// from before ranks[].sends): said once, then it goes through MPI.
void NcclTransport::noOrder(int32_t peer) {
  if (saidNoOrder)
    return;
  saidNoOrder = true;
  std::fprintf(stderr,
               "zb-run: rank %d: no message order for the channel to rank %d "
               "(plan.json without ranks[].sends: recompile it): its messages "
               "go through MPI on the host\n",
               detail::rank(), peer);
}

/// One two-rank communicator per direction between ring neighbours of this
/// rank's pipeline (r and r+1 mod p: every pipeline, interleaved and V-shape
/// schedule talks only to those; world ranks, the pipelines of a
/// data-parallel job apart), created in one global order so no rank waits
/// on a cycle; the
/// sender makes the unique id and gives it to the receiver over MPI. Both
/// ends skip a pair in `excluded` (symmetric: the peers on one device).
void NcclTransport::createChannels(const std::set<int32_t> &excluded) {
  int rank = detail::rank(), size = detail::pipelineSize();
  const int base = detail::pipelineBase();
  if (size < 2)
    return;
  std::set<std::pair<int, int>> directed;
  for (int r = 0; r < size; ++r) {
    int next = (r + 1) % size;
    directed.insert({base + r, base + next});
    directed.insert({base + next, base + r});
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &bootstrap);
  for (auto [from, to] : directed) {
    if ((rank != from && rank != to) ||
        excluded.count(rank == from ? to : from))
      continue;
    NcclUniqueId id;
    if (rank == from) {
      check(nccl.getUniqueId(&id), "ncclGetUniqueId", to);
      MPI_Send(&id, sizeof id, MPI_BYTE, to, 0, bootstrap);
    } else {
      MPI_Recv(&id, sizeof id, MPI_BYTE, from, 0, bootstrap, MPI_STATUS_IGNORE);
    }
    Channel c;
    int peer = rank == from ? to : from;
    check(nccl.commInitRank(&c.comm, 2, id, rank == from ? 0 : 1),
          "ncclCommInitRank", peer);
    cuda::check(driver().cuStreamCreate(&c.stream, kStreamNonBlocking),
                "cuStreamCreate");
    (rank == from ? sendTo : recvFrom)[peer] = c;
    ++device.stats.ncclCommunicators;
    if (peer < 64)
      device.stats.ncclPeers |= uint64_t(1) << peer;
  }
}

bool NcclTransport::send(const void *buf, int64_t bytes, int32_t peer,
                         int32_t tag) {
  auto it = sendTo.find(peer);
  if (it == sendTo.end() || !it->second.comm)
    return false;
  auto known = sendOrder.find(peer);
  if (known == sendOrder.end()) {
    noOrder(peer);
    return false;
  }
  Message m{tag, bytes};
  const std::vector<Message> &order = known->second;
  size_t &position = sendPosition[peer];
  if (position >= order.size() || !(order[position] == m))
    fatalf("the %s to rank %d is not message %zu of the step in plan.json "
           "(the rank programs and plan.json do not belong together)",
           describe(m).c_str(), peer, position + 1);
  ++position;
  Staging s = device.takeStaging((size_t)bytes);
  if (bytes > 0)
    cuda::check(driver().cuMemcpyAsync(s.ptr,
                                       reinterpret_cast<CUdeviceptr>(buf),
                                       (size_t)bytes, device.compute),
                "cuMemcpyAsync");
  device.streamWaits(it->second.stream, device.compute);
  check(nccl.send(reinterpret_cast<const void *>(s.ptr), (size_t)bytes,
                  kNcclInt8, /*peer=*/1, it->second.comm, it->second.stream),
        "ncclSend", peer);
  s.done = device.recordOn(it->second.stream);
  device.inFlight(s);
  ++device.stats.ncclSends;
  return true;
}

/// A message that arrived earlier, into a staging block: copied over.
bool NcclTransport::takeEarly(void *buf, const Message &m, int32_t peer) {
  std::vector<EarlyMessage> &waiting = early[peer];
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (!(waiting[i].message == m))
      continue;
    EarlyMessage e = waiting[i];
    waiting.erase(waiting.begin() + i);
    cuda::check(driver().cuStreamWaitEvent(device.compute, e.arrived, 0),
                "cuStreamWaitEvent");
    if (m.bytes > 0)
      cuda::check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(buf),
                                         e.staging.ptr, (size_t)m.bytes,
                                         device.compute),
                  "cuMemcpyAsync");
    pendingRecvs.push_back({peer, m.tag, e.arrived});
    e.staging.done = device.recordOn(device.compute);
    device.inFlight(e.staging);
    ++device.stats.earlyMessages;
    return true;
  }
  return false;
}

/// Messages the peer sends before `m` go to staging blocks first.
void NcclTransport::receiveEarlierMessages(const Message &m, int32_t peer,
                                           const Channel &c) {
  const std::vector<Message> &order = channelOrder[peer];
  size_t &position = channelPosition[peer];
  while (position < order.size() && !(order[position] == m)) {
    if (order[position].tag == m.tag)
      fatalf("the %s from rank %d does not have the %lld bytes this rank "
             "expects",
             describe(order[position]).c_str(), peer, (long long)m.bytes);
    EarlyMessage e{order[position],
                   device.takeStaging((size_t)order[position].bytes), nullptr};
    check(nccl.recv(reinterpret_cast<void *>(e.staging.ptr),
                    (size_t)e.message.bytes, kNcclInt8, /*peer=*/0, c.comm,
                    c.stream),
          "ncclRecv", peer);
    e.arrived = device.recordOn(c.stream);
    early[peer].push_back(e);
    ++position;
    ++device.stats.ncclRecvs;
  }
  if (position >= order.size())
    fatalf("rank %d sends no %s in a step of plan.json (or sent it "
           "already): the rank programs and plan.json do not belong together",
           peer, describe(m).c_str());
  ++position;
}

bool NcclTransport::recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) {
  auto it = recvFrom.find(peer);
  if (it == recvFrom.end() || !it->second.comm || !channelOrder.count(peer))
    return false;
  Message m{tag, bytes};
  if (takeEarly(buf, m, peer))
    return true;
  const Channel &c = it->second;
  receiveEarlierMessages(m, peer, c);
  device.streamWaits(c.stream, device.compute);
  check(nccl.recv(buf, (size_t)bytes, kNcclInt8, /*peer=*/0, c.comm, c.stream),
        "ncclRecv", peer);
  Handle arrived = device.recordOn(c.stream);
  cuda::check(driver().cuStreamWaitEvent(device.compute, arrived, 0),
              "cuStreamWaitEvent");
  pendingRecvs.push_back({peer, tag, arrived});
  ++device.stats.ncclRecvs;
  return true;
}

void NcclTransport::pollErrors() {
  for (auto *channels : {&sendTo, &recvFrom})
    for (auto &[peer, c] : *channels) {
      int state = 0;
      if (!c.comm)
        continue;
      int r = nccl.commGetAsyncError(c.comm, &state);
      if (r == 0 && (state == 0 || state == kNcclInProgress))
        continue;
      int err = r != 0 ? r : state;
      std::string text = nccl.errorString(err);
      char action[128];
      detail::currentAction(action, sizeof action);
      abort();
      fatalf("NCCL error in the communication with rank %d (noticed %s): %s",
             peer, action, text.c_str());
    }
}

bool NcclTransport::idle() {
  for (auto *channels : {&sendTo, &recvFrom})
    for (auto &[peer, c] : *channels) {
      CUresult r = driver().cuStreamQuery(c.stream);
      if (r == kNotReady)
        return false;
      cuda::check(r, "cuStreamQuery");
    }
  return true;
}

std::string NcclTransport::pendingReceive() {
  for (const PendingRecv &r : pendingRecvs)
    if (!Device::eventDone(r.done)) {
      char tag[128];
      detail::describeTag(r.tag, tag, sizeof tag);
      return std::string("the NCCL receive of the message with ") + tag +
             " from rank " + std::to_string(r.peer);
    }
  return "";
}

void NcclTransport::receivesArrived() {
  for (const PendingRecv &r : pendingRecvs)
    device.release(r.done);
  pendingRecvs.clear();
}

/// Every message of the step's order was sent and received.
void NcclTransport::checkStepOrders() {
  for (auto &[peer, order] : sendOrder)
    if (sendPosition[peer] != order.size())
      fatalf("this rank sent %zu of the %zu messages to rank %d of a step "
             "in plan.json: the rank programs and plan.json do not belong "
             "together",
             sendPosition[peer], order.size(), peer);
  for (auto &[peer, order] : channelOrder)
    if (channelPosition[peer] != order.size() || !early[peer].empty())
      fatalf("this rank received %zu of the %zu messages from rank %d of a "
             "step in plan.json: the rank programs and plan.json do not "
             "belong together",
             channelPosition[peer] - early[peer].size(), order.size(), peer);
  sendPosition.clear();
  channelPosition.clear();
}

void NcclTransport::stepEnd() { checkStepOrders(); }

void NcclTransport::setChannelOrder(int32_t from, int32_t to,
                                    const std::vector<ChannelMessage> &order) {
  const int32_t rank = detail::rank();
  if (from == rank && sendTo.count(to))
    sendOrder[to] = order;
  else if (to == rank && recvFrom.count(from))
    channelOrder[from] = order;
}

void NcclTransport::abort() {
  for (auto *channels : {&sendTo, &recvFrom})
    for (auto &[peer, c] : *channels)
      if (c.comm) {
        nccl.commAbort(c.comm);
        c.comm = nullptr;
      }
}

void NcclTransport::finalize() {
  for (auto *channels : {&sendTo, &recvFrom})
    for (auto &[peer, c] : *channels)
      if (c.comm)
        nccl.commDestroy(c.comm);
  sendTo.clear();
  recvFrom.clear();
  if (bootstrap != MPI_COMM_NULL)
    MPI_Comm_free(&bootstrap);
}

} // namespace

const Nccl *zbrt::cuda::loadNccl(std::string &why) {
  static Nccl nccl{};
  static bool tried = false, loaded = false;
  static std::string failure;
  if (!tried) {
    tried = true;
    const char *name = libraryFromEnv("ZBRT_NCCL", "libnccl.so.2");
    if (std::string(name) == "none") {
      failure = "ZBRT_NCCL=none";
    } else {
#define ZBRT_NCCL_ROW(field, symbol, result, params) {symbol, nccl.field},
      loaded = openLibrary(name, {ZBRT_NCCL_FUNCTIONS(ZBRT_NCCL_ROW)},
                           failure) != nullptr;
#undef ZBRT_NCCL_ROW
    }
  }
  if (!loaded)
    why = failure;
  return loaded ? &nccl : nullptr;
}

std::unique_ptr<Transport> zbrt::cuda::createNcclTransport(
    Device &device, const std::vector<int32_t> &excluded, std::string &why) {
  const Nccl *nccl = loadNccl(why);
  if (!nccl)
    return nullptr;
  auto transport = std::make_unique<NcclTransport>(device, *nccl);
  transport->createChannels({excluded.begin(), excluded.end()});
  return transport;
}
