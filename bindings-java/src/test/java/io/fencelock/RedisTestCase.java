package io.fencelock;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A test with a redis-server of its own on a free port and a manager on it, both stopped after. */
abstract class RedisTestCase {
    protected RedisServer redis;
    protected LockManager manager;

    @BeforeEach
    void startRedis() throws Exception {
        redis = RedisServer.start();
        manager = LockManager.create(redis.url());
    }

    @AfterEach
    void stopRedis() throws Exception {
        manager.close();
        redis.close();
    }
}
