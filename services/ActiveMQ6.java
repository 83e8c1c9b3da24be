// Starts an ActiveMQ Classic 6 broker from a config URI (xbean:file:activemq.xml) and waits until it stops.
// Run as a single-file program (java -cp 'lib/*' ActiveMQ6.java URI): the Maven jars have no launcher of their own.
public class ActiveMQ6 {
    public static void main(String[] args) throws Exception {
        org.apache.activemq.broker.BrokerService broker = org.apache.activemq.broker.BrokerFactory.createBroker(args[0]);
        broker.start(); // its shutdown hook stops it on SIGTERM
        broker.waitUntilStopped();
    }
}
