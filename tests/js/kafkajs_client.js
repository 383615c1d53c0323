'use strict'
// KafkaJS against a running minikafka cluster, one scenario per subcommand, for
// tests/integration/test_kafkajs.py.
//
//   node kafkajs_client.js SUBCOMMAND 'JSON ARGUMENTS'
//
// prints one JSON object on stdout: the scenario's observations, which the Python test
// asserts on (nothing is asserted here). KafkaJS's own log lines go to stderr, so stdout
// holds that one object only. A failure prints {"error": {name, message, type}} and
// exits 1; a scenario still running after args.deadline_ms exits 2, so a broker that
// stops answering fails the test rather than hanging it.
//
// Byte conventions: record values travel base64 encoded both ways (any byte may appear);
// keys and header values are UTF-8 text. Offsets are decimal strings, as KafkaJS gives them.

const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs')

const COMPRESSION = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }

function stderrLogger() {
  return ({ namespace, level, label, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

function client(args) {
  const config = {
    clientId: args.client_id || 'minikafka-kafkajs',
    brokers: args.brokers,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    logLevel: logLevel.WARN,
    logCreator: stderrLogger,
    retry: { retries: args.retries === undefined ? 8 : args.retries, initialRetryTime: 100 },
  }
  if (args.ca_pem) config.ssl = { ca: [args.ca_pem] }
  if (args.sasl) config.sasl = args.sasl
  return new Kafka(config)
}

function describeRecord(topic, partition, message) {
  const headers = {}
  for (const [name, value] of Object.entries(message.headers || {})) {
    headers[name] = value === null || value === undefined ? null : value.toString('utf8')
  }
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key === null ? null : message.key.toString('utf8'),
    value: message.value === null ? null : message.value.toString('base64'),
    headers,
  }
}

function asMessage(record) {
  return {
    partition: record.partition,
    key: record.key,
    value: Buffer.from(record.value, 'base64'),
    headers: record.headers || {},
  }
}

async function until(condition, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function createTopics(kafka, topics) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await admin.createTopics({ topics, waitForLeaders: true, timeout: 20000 })
  } finally {
    await admin.disconnect()
  }
}

// Read `topics` with a consumer group until `done(records)`; every record is committed
// (autoCommit off, one commitOffsets per record) and only then counted as read, so a record
// whose commit failed in a rebalance is read again rather than counted twice.
async function readGroup(kafka, { topics, group, members, readUncommitted, done, timeoutMs }) {
  const records = []
  const assignments = {} // each member's latest assignment
  const owned = {} // each member's partitions of every assignment it had, by topic
  const consumers = []
  for (let member = 0; member < members; member++) {
    const consumer = kafka.consumer({
      groupId: group,
      readUncommitted: !!readUncommitted,
      maxWaitTimeInMs: 200,
      heartbeatInterval: 500,
      sessionTimeout: 10000,
    })
    consumer.on(consumer.events.GROUP_JOIN, event => {
      const assignment = event.payload.memberAssignment
      assignments[member] = assignment
      owned[member] = owned[member] || {}
      for (const [topic, partitions] of Object.entries(assignment)) {
        owned[member][topic] = [...new Set([...(owned[member][topic] || []), ...partitions])]
      }
    })
    consumers.push(consumer)
  }
  try {
    await Promise.all(
      consumers.map(async (consumer, member) => {
        await consumer.connect()
        for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true })
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ topic, partition, message }) => {
            const next = (BigInt(message.offset) + 1n).toString()
            await consumer.commitOffsets([{ topic, partition, offset: next }])
            records.push({ member, ...describeRecord(topic, partition, message) })
          },
        })
      })
    )
    await until(() => done(records), 'the records', timeoutMs)
  } finally {
    await Promise.all(consumers.map(consumer => consumer.disconnect()))
  }
  return { records, assignments, owned }
}

async function fetchOffsets(kafka, group, topics) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await admin.fetchOffsets({ groupId: group, topics })
  } finally {
    await admin.disconnect()
  }
}

const scenarios = {
  // createTopics, fetchTopicMetadata, describeConfigs, alterConfigs, deleteTopics,
  // describeCluster, each answer reported as KafkaJS gives it.
  async admin(kafka, args) {
    const admin = kafka.admin()
    const resource = { type: ConfigResourceTypes.TOPIC, name: args.topic }
    const describe = async () =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ ...resource, configNames: args.config_names }],
      })
    await admin.connect()
    try {
      const created = await admin.createTopics({
        waitForLeaders: true,
        timeout: 20000,
        topics: [
          {
            topic: args.topic,
            numPartitions: args.partitions,
            replicationFactor: args.replication_factor,
            configEntries: Object.entries(args.configs).map(([name, value]) => ({ name, value })),
          },
        ],
      })
      const createdAgain = await admin
        .createTopics({ topics: [{ topic: args.topic }], waitForLeaders: false })
        .catch(error => ({ name: error.name, type: error.type }))
      const metadata = await admin.fetchTopicMetadata({ topics: [args.topic] })
      const before = await describe()
      const altered = await admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            ...resource,
            configEntries: Object.entries(args.alter).map(([name, value]) => ({ name, value })),
          },
        ],
      })
      const after = await describe()
      const cluster = await admin.describeCluster()
      await admin.deleteTopics({ topics: [args.topic], timeout: 20000 })
      const listed = await admin.listTopics()
      return { created, createdAgain, metadata, before, altered, after, cluster, listed }
    } finally {
      await admin.disconnect()
    }
  },

  // Create the topic, then send each batch (its own compression) with args.acks.
  async produce(kafka, args) {
    if (args.create) await createTopics(kafka, [args.create])
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    try {
      const sent = []
      for (const batch of args.batches) {
        sent.push(
          await producer.send({
            topic: args.topic,
            acks: args.acks,
            compression: COMPRESSION[batch.compression],
            messages: batch.messages.map(asMessage),
          })
        )
      }
      return { sent }
    } finally {
      await producer.disconnect()
    }
  },

  // A group of args.members consumers reading args.topic until args.expect records, then
  // the group's committed offsets as the admin client fetches them.
  async group(kafka, args) {
    const read = await readGroup(kafka, {
      topics: [args.topic],
      group: args.group,
      members: args.members,
      done: records => records.length >= args.expect,
      timeoutMs: args.read_timeout_ms,
    })
    const committed = await fetchOffsets(kafka, args.group, [args.topic])
    return { ...read, committed }
  },

  // An idempotent producer's records, then transactions over two topics (commit, abort,
  // commit; each one sendBatch of both topics), read back by a read_committed group and by
  // a read_uncommitted one.
  async transactions(kafka, args) {
    const [first, second] = args.topics
    await createTopics(
      kafka,
      args.topics.map(topic => ({ topic, numPartitions: 1, replicationFactor: 3 }))
    )
    const idempotent = kafka.producer({ idempotent: true, allowAutoTopicCreation: false })
    await idempotent.connect()
    const plain = args.idempotent_values.map(value => ({ value: Buffer.from(value) }))
    try {
      await idempotent.send({ topic: first, acks: -1, messages: plain })
    } finally {
      await idempotent.disconnect()
    }
    const producer = kafka.producer({
      transactionalId: args.transactional_id,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    })
    await producer.connect()
    try {
      for (const { values, outcome } of args.transactions) {
        const transaction = await producer.transaction()
        const topicMessages = args.topics.map(topic => ({
          topic,
          messages: values.map(value => ({ key: topic, value: Buffer.from(value) })),
        }))
        await transaction.sendBatch({ topicMessages }) // both topics in one request per leader
        await (outcome === 'commit' ? transaction.commit() : transaction.abort())
      }
    } finally {
      await producer.disconnect()
    }
    const last = args.transactions[args.transactions.length - 1].values.slice(-1)[0]
    const reached = records =>
      args.topics.every(topic =>
        records.some(r => r.topic === topic && Buffer.from(r.value, 'base64').toString() === last)
      )
    const read = async (group, readUncommitted) =>
      (
        await readGroup(kafka, {
          topics: [first, second],
          group,
          members: 1,
          readUncommitted,
          done: reached,
          timeoutMs: args.read_timeout_ms,
        })
      ).records
    const [committed, uncommitted] = await Promise.all([
      read(`${args.group}-committed`, false),
      read(`${args.group}-uncommitted`, true),
    ])
    return { committed, uncommitted }
  },

  // Consume-transform-produce: each record of args.input is upper-cased to args.output in
  // a transaction that also commits the group's offset past it (sendOffsets). Before that
  // a transaction with sendOffsets past every record is aborted: its offsets must not stick.
  async ctp(kafka, args) {
    await createTopics(kafka, [
      { topic: args.input, numPartitions: 1, replicationFactor: 3 },
      { topic: args.output, numPartitions: 1, replicationFactor: 3 },
    ])
    const producer = kafka.producer({
      transactionalId: args.transactional_id,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    })
    await producer.connect()
    const offsetsOf = offset => ({
      consumerGroupId: args.group,
      topics: [{ topic: args.input, partitions: [{ partition: 0, offset: String(offset) }] }],
    })
    const consumer = kafka.consumer({ groupId: args.group, maxWaitTimeInMs: 200 })
    let transformed = 0
    try {
      await producer.send({
        topic: args.input,
        acks: -1,
        messages: args.values.map(value => ({ value: Buffer.from(value) })),
      })
      const aborted = await producer.transaction()
      await aborted.send({ topic: args.output, messages: [{ value: Buffer.from('ABORTED') }] })
      await aborted.sendOffsets(offsetsOf(args.values.length))
      await aborted.abort()
      const afterAbort = await fetchOffsets(kafka, args.group, [args.input])

      await consumer.connect()
      await consumer.subscribe({ topic: args.input, fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const transaction = await producer.transaction()
          try {
            const value = Buffer.from(message.value.toString().toUpperCase())
            await transaction.send({ topic: args.output, messages: [{ value }] })
            await transaction.sendOffsets(offsetsOf(BigInt(message.offset) + 1n))
            await transaction.commit()
            transformed += 1
          } catch (error) {
            await transaction.abort()
            throw error
          }
        },
      })
      await until(() => transformed >= args.values.length, 'the transforms', args.read_timeout_ms)
      await consumer.disconnect()
      const afterCommit = await fetchOffsets(kafka, args.group, [args.input])
      const last = args.values[args.values.length - 1].toUpperCase()
      const { records } = await readGroup(kafka, {
        topics: [args.output],
        group: `${args.group}-check`,
        members: 1,
        readUncommitted: false,
        done: rs => rs.some(r => Buffer.from(r.value, 'base64').toString() === last),
        timeoutMs: args.read_timeout_ms,
      })
      return { afterAbort, afterCommit, output: records }
    } finally {
      await consumer.disconnect()
      await producer.disconnect()
    }
  },

  // Over a secured listener: one record produced to args.topic and read back by a group.
  async roundtrip(kafka, args) {
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    try {
      await producer.send({ topic: args.topic, acks: -1, messages: [asMessage(args.record)] })
    } finally {
      await producer.disconnect()
    }
    const { records } = await readGroup(kafka, {
      topics: [args.topic],
      group: args.group,
      members: 1,
      done: rs => rs.some(r => r.value === args.record.value),
      timeoutMs: args.read_timeout_ms,
    })
    return { records }
  },

  // Connecting a producer: with bad credentials this is where KafkaJS fails.
  async connect(kafka) {
    const producer = kafka.producer()
    await producer.connect()
    await producer.disconnect()
    return { connected: true }
  },
}

async function main() {
  const [name, raw] = process.argv.slice(2)
  const scenario = scenarios[name]
  if (!scenario) throw new Error(`unknown scenario ${name}`)
  const args = JSON.parse(raw)
  const timer = setTimeout(() => {
    process.stdout.write(JSON.stringify({ error: { name: 'Deadline', message: name } }) + '\n')
    process.exit(2)
  }, args.deadline_ms || 30000)
  const result = await scenario(client(args), args)
  clearTimeout(timer)
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().catch(error => {
  const { name, message, type } = error
  process.stdout.write(JSON.stringify({ error: { name, message, type: type || null } }) + '\n')
  process.exit(1)
})
